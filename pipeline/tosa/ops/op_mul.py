"""aten.mul.Tensor -> MUL (int: both inputs widened to int32 without their zero points, MUL,
one RESCALE by ``x_scale * y_scale / out_scale``; see ``pipeline/tosa/emit/elementwise.py``).

Division by a scalar is times its reciprocal. Times a positive scalar (or 0) is only a RESCALE
(the factor joins the scale); times a negative one negates the widened input with a SUB from 0
first, since RESCALE scales are non-negative. Float (FP profile): one MUL, whose int8 shift
operand TOSA keeps in every profile (``emit.fp.mul_shift``).
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.elementwise import (
    check_operands,
    emit_unquantized,
    narrow,
    ranked,
    scalar_const,
    widen,
)
from pipeline.tosa.emit.fp import mul_shift
from pipeline.quant.rules import BINARY
from pipeline.tosa.registry import Operator, lowers


def _times_scalar(node: fx.Node, ctx: LoweringContext, x: fx.Node, factor: float) -> None:
    x_q, out_q = ctx.qparams(x), ctx.qparams(node)
    if factor >= 0:  # a zero factor: a RESCALE by 0 writes the zero point, torch's 0.0
        emit.rescale(
            ctx, node, ranked(ctx, node, x), [factor * x_q.tensor_scale / out_q.tensor_scale],
            in_zp=x_q.zero_point, out_zp=out_q.zero_point, out_dtype=out_q.dtype,
            out=ctx.define(node),
        )  # fmt: skip
        return
    widened = widen(ctx, node, x, 1.0, "in0")
    negated = ctx.temp(node, "negated", tosa_shape(node), "int32")
    ctx.emit("SUB", [scalar_const(ctx, node, 0, "int32"), widened], [negated], node)
    narrow(ctx, node, negated, -factor * x_q.tensor_scale)


@lowers("aten.div.Tensor")
def visit_div(node: fx.Node, ctx: LoweringContext) -> None:
    a, b = check_operands(node, ctx)
    if isinstance(b, fx.Node) or b == 0 or node.kwargs.get("rounding_mode") is not None:
        raise ctx.unsupported(node, "a tensor or zero divisor", "division by a non-zero number")
    if ctx.qparams(node) is None:
        factor = scalar_const(ctx, node, 1.0 / b, "fp32")
        shift = mul_shift(ctx, node)
        ctx.emit("MUL", [ranked(ctx, node, a), factor, shift], [ctx.define(node)], node)
        return
    _times_scalar(node, ctx, a, 1.0 / float(b))


@lowers("aten.mul.Tensor")
def visit_mul(node: fx.Node, ctx: LoweringContext) -> None:
    a, b = check_operands(node, ctx)
    out_q = ctx.qparams(node)
    if out_q is None:  # float, or integers (``ids * 2``, int8 wrapping like torch's)
        emit_unquantized(node, ctx, "MUL", (a, b))
        return
    if ctx.qparams(a) is None or (isinstance(b, fx.Node) and ctx.qparams(b) is None):
        raise ctx.unsupported(
            node, "a float operand in a quantized graph", "both operands quantized"
        )
    if not isinstance(b, fx.Node):
        _times_scalar(node, ctx, a, float(b))
        return
    shift = mul_shift(ctx, node)
    product = ctx.temp(node, "int32", tosa_shape(node), "int32")
    operands = [widen(ctx, node, a, 1.0, "in0"), widen(ctx, node, b, 1.0, "in1")]
    ctx.emit("MUL", [*operands, shift], [product], node)
    narrow(ctx, node, product, ctx.qparams(a).tensor_scale * ctx.qparams(b).tensor_scale)


OPERATOR = Operator(
    "x * y and x / y -> MUL of int32 operands (+ RESCALE); by a number: one RESCALE or TABLE",
    quant=BINARY,
)
