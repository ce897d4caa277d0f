"""aten.mm / aten.addmm (and ``x @ W``, which torch.export keeps as aten.matmul: op_matmul.py
sends it here).

With a constant second operand ``W`` [in, out] the product is a linear layer and is lowered
like one (see op_linear.py): RESHAPE to [rows, 1, 1, in] -> 1x1 CONV2D -> RESCALE -> RESHAPE,
Vela's fully-connected path. ``W`` is linear's weight transposed, quantized per channel along
its axis 1 (the output features); addmm's bias becomes the convolution's bias. addmm computes
``beta * bias + alpha * (x @ W)``: only alpha = beta = 1 is a plain linear layer; the
normalisation writes every other addmm out (``pipeline/normalise/rewrites.py``).
Two activations are an activation product, lowered by op_matmul.py as MATMUL.
"""

from __future__ import annotations

import math

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.emit.conv import Conv2dGeometry, emit_conv2d
from pipeline.tosa.registry import lowers


@lowers("aten.mm.default", "aten.addmm.default")
def visit_mm(node: fx.Node, ctx: LoweringContext) -> None:
    bias, (x, weight) = None, node.args[:2]
    if str(node.target) == "aten.addmm.default":
        bias, x, weight = node.args[:3]
        for name in ("beta", "alpha"):
            if node.kwargs.get(name, 1) != 1:
                raise ctx.unsupported(node, f"{name}={node.kwargs[name]}", "alpha=1, beta=1")
    if ctx.const_value(weight) is not None:
        visit_weighted_product(node, ctx, x, weight, bias)
        return
    if bias is not None:
        raise ctx.unsupported(node, "a non-constant second operand", "constant weights")
    from pipeline.tosa.ops.op_matmul import visit_matmul  # op_matmul imports this module

    visit_matmul(node, ctx)


def visit_weighted_product(
    node: fx.Node, ctx: LoweringContext, x: fx.Node, weight: fx.Node, bias: fx.Node | None
) -> None:
    """``x @ weight (+ bias)`` with a constant [in, out] ``weight`` as a 1x1 CONV2D."""
    in_features, out_features = torch_shape(weight)
    if bias is not None and (ctx.const_value(bias) is None or torch_shape(bias) != (out_features,)):
        raise ctx.unsupported(node, "this bias", f"a constant bias of shape [{out_features}]")
    rows = math.prod(torch_shape(x)[:-1])
    shape = (rows, 1, 1, out_features)
    as_image = emit.relayout(
        ctx, node, ctx.tensor(x), dim_order(x), (rows, 1, 1, in_features), (0, 1, 2, 3)
    )
    linear_weight = _linear_weight(ctx, weight)
    weight_ohwi = ctx.const_value(linear_weight).reshape(out_features, 1, 1, in_features)
    conv_out = ctx.temp(node, "conv", shape, ctx.dtype(node))
    emit_conv2d(
        ctx, node, as_image, ctx.qparams(x), linear_weight, weight_ohwi.numpy(), bias,
        Conv2dGeometry(), shape, conv_out,
    )  # fmt: skip
    emit.relayout(ctx, node, conv_out, (0, 1, 2, 3), torch_shape(node), dim_order(node), True)


def _linear_weight(ctx: LoweringContext, weight: fx.Node) -> fx.Node:
    """``weight`` [in, out] as linear's [out, in] weight with the same quantization, which
    applies per output feature either way: a node outside the graph, read by emit_conv2d."""
    linear = fx.Graph().placeholder(f"{weight.name}_t")
    linear.meta["const"] = ctx.const_value(weight).detach().t().contiguous()
    if ctx.qparams(weight) is not None:
        linear.meta["qparams"] = ctx.qparams(weight)
    return linear
