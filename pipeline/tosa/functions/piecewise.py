"""int16 forms of the piecewise-linear activations hardsigmoid and hardswish, in fixed point.

An interpolated int16 TABLE (``ops/op_table.py``) follows a kink only at its entries, 128
codes apart: hardswish's kinks at -3 and 3 fall inside an interval for most scales, up to
9 LSBs off there. Written out instead (int8 keeps its exact TABLE):

    h = clamp(RESCALE(x, s_in / 6 * 2**k) + 2**k / 2, 0, 2**k)    hardsigmoid in 2**-k steps
    hardsigmoid = RESCALE(h, 2**-k / s_out)
    hardswish   = RESCALE(x * h, s_in * 2**-k / s_out)              (x * h < 2**31: k = 15)

``h`` rounds once (half a step of 2**-15); the output RESCALE once more: within 1 LSB of
torch, which verify checks (its error bound does not analyse the MUL of two computed values).
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.elementwise import scalar_const
from pipeline.tosa.emit.fp import mul_shift
from pipeline.tosa.quant_math import QParams

FRACTION_BITS = 15  # |x| < 2**15 times h <= 2**15: the product fits int32


def _op(ctx: LoweringContext, node: fx.Node, op: str, a: str, b: str, **attrs) -> str:
    out = ctx.temp(node, op.lower(), tosa_shape(node), "int32")
    ctx.emit(op, [a, b] + ([mul_shift(ctx, node)] if op == "MUL" else []), [out], node, **attrs)
    return out


def _hardsigmoid(ctx: LoweringContext, node: fx.Node, x_q: QParams) -> str:
    """``h``: hardsigmoid of the input in int32 steps of 2**-FRACTION_BITS."""
    one = 1 << FRACTION_BITS
    scaled = emit.rescale(
        ctx, node, ctx.tensor(node.args[0]), [x_q.tensor_scale / 6 * one],
        in_zp=x_q.zero_point, out_zp=0, out_dtype="int32", suffix="sixth",
    )  # fmt: skip
    shifted = _op(ctx, node, "ADD", scaled, scalar_const(ctx, node, one // 2, "int32"))
    low = _op(ctx, node, "MAXIMUM", shifted, scalar_const(ctx, node, 0, "int32"),
              nan_mode="PROPAGATE")  # fmt: skip
    return _op(ctx, node, "MINIMUM", low, scalar_const(ctx, node, one, "int32"),
               nan_mode="PROPAGATE")  # fmt: skip


def emit_hard(node: fx.Node, ctx: LoweringContext, x_q: QParams, out_q: QParams) -> None:
    """int16 hardsigmoid or hardswish of ``node``'s input into its output."""
    h = _hardsigmoid(ctx, node, x_q)
    step = 2.0**-FRACTION_BITS / out_q.tensor_scale
    if str(node.target) == "aten.hardswish.default":
        x = emit.rescale(ctx, node, ctx.tensor(node.args[0]), [1.0], in_zp=x_q.zero_point,
                         out_zp=0, out_dtype="int32", suffix="wide")  # fmt: skip
        h, step = _op(ctx, node, "MUL", x, h), step * x_q.tensor_scale
    emit.rescale(ctx, node, h, [step], in_zp=0, out_zp=out_q.zero_point,
                 out_dtype=out_q.dtype, out=ctx.define(node))  # fmt: skip
