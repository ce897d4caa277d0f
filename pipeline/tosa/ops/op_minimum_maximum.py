"""aten.minimum / aten.maximum (and clamp_max / clamp_min by a tensor, the same operation) of
two tensors, broadcasting -> MINIMUM / MAXIMUM.

TOSA 1.0 PRO-INT has MINIMUM/MAXIMUM on int32 only, so integer operands are widened by a
RESCALE (``x - zp`` in the output's units), compared, and one RESCALE narrows the result.
The comparison needs both operands on one scale. The quantizer shares one quantization
between both inputs and the output (as for cat) instead of letting this visitor rescale each
input onto an output scale of its own: shared, every RESCALE here has scale 1.0 and is exact,
so the result is one of the inputs bit for bit, as in torch's q/dq graph. An input quantized
otherwise is requantized by the dq -> q pair torch's graph holds too (one RESCALE, rounded
once, like torch); should one still differ here it is rescaled while being widened.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.elementwise import narrow, ranked, widen
from pipeline.quant.rules import shared_inputs
from pipeline.tosa.registry import Operator, lowers
from pipeline.fx import target_name

OPS = {
    "aten.minimum.default": "MINIMUM",
    "aten.maximum.default": "MAXIMUM",
    "aten.clamp_max.Tensor": "MINIMUM",
    "aten.clamp_min.Tensor": "MAXIMUM",
}


@lowers(*OPS)
def visit_minimum_maximum(node: fx.Node, ctx: LoweringContext) -> None:
    operands, op = node.args[:2], OPS[target_name(node.target)]
    if not all(isinstance(x, fx.Node) for x in operands):
        raise ctx.unsupported(node, "a number operand", "two tensors")
    out_q = ctx.qparams(node)
    if out_q is None:
        inputs = [ranked(ctx, node, x) for x in operands]
        ctx.emit(op, inputs, [ctx.define(node)], node, nan_mode="PROPAGATE")
        return
    if any(ctx.qparams(x) is None for x in operands):
        raise ctx.unsupported(node, "a float operand in a quantized graph", "both quantized")
    scale = out_q.tensor_scale
    inputs = [
        widen(ctx, node, x, ctx.qparams(x).tensor_scale / scale, f"in{i}")
        for i, x in enumerate(operands)
    ]
    result = ctx.temp(node, "int32", tosa_shape(node), "int32")
    ctx.emit(op, inputs, [result], node, nan_mode="PROPAGATE")
    narrow(ctx, node, result, scale)


OPERATOR = Operator(
    "minimum / maximum (and clamp_min / clamp_max by a tensor) -> MINIMUM / MAXIMUM",
    quant=shared_inputs(0, 1),
)
