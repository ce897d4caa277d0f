"""aten.linear.default -> RESHAPE to [N, 1, 1, in] -> 1x1 CONV2D -> RESCALE -> RESHAPE.

Linear layers with constant weights are lowered as 1x1 convolutions rather than MATMUL:
Vela maps them to its fully-connected path on Ethos-U55 and -U85 (encoded weights, bias
and per-channel scale fused into the one NPU op), while TOSA MATMUL needs both operands as
activations with one shared scale. MATMUL stays for activation x activation products.
"""

from __future__ import annotations

import math

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.emit.conv import Conv2dGeometry, emit_conv2d
from pipeline.quant.rules import weighted
from pipeline.tosa.registry import Operator, lowers


@lowers("aten.linear.default")
def visit_linear(node: fx.Node, ctx: LoweringContext) -> None:
    x, weight = node.args[0], node.args[1]
    bias = node.args[2] if len(node.args) > 2 else None
    if ctx.const_value(weight) is None:
        raise ctx.unsupported(node, "non-constant weights", "constant weights")
    out_features, in_features = torch_shape(weight)
    rows = math.prod(torch_shape(x)[:-1])
    as_image = emit.relayout(
        ctx, node, ctx.tensor(x), dim_order(x), (rows, 1, 1, in_features), (0, 1, 2, 3)
    )
    weight_ohwi = ctx.const_value(weight).detach().reshape(out_features, 1, 1, in_features)
    out_dtype = ctx.dtype(node)
    conv_out = ctx.temp(node, "conv", (rows, 1, 1, out_features), out_dtype)
    emit_conv2d(
        ctx,
        node,
        as_image,
        ctx.qparams(x),
        weight,
        weight_ohwi.numpy(),
        bias,
        Conv2dGeometry(),
        (rows, 1, 1, out_features),
        conv_out,
    )
    emit.relayout(
        ctx, node, conv_out, (0, 1, 2, 3), torch_shape(node), dim_order(node), define=True
    )


OPERATOR = Operator(
    "linear -> RESHAPE, 1x1 CONV2D, RESCALE, RESHAPE",
    quant=weighted(),
)
