"""Integer ADD / SUB / MUL shared by their visitors: operands widened to int32 by RESCALE,
the int32 operator, one RESCALE to the output's quantization.

ADD/SUB put both operands on one common scale first. Inputs are shifted left so the two
scales can be matched with little rounding error: 20 bits for int8 (|x - zp| <= 255 stays
below 2**28), 15 for int16 (|x| <= 32767 stays below 2**30), the split TFLite/Ethos-U use.
MUL needs no common scale: int32 (x - x_zp) * (y - y_zp) is in units of x_scale * y_scale
(int8: |product| <= 2**16; int16 symmetric: <= 2**30, no overflow).

A Python scalar operand (``x + 1.0``, ``x * 0.5``) becomes an int32 constant in the widened
units, or for MUL a factor folded into the output RESCALE: never a float in the graph.
"""

from __future__ import annotations

import numpy as np
from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape, tosa_shape
from pipeline.tosa.quant_math import QParams

LEFT_SHIFT = {"int8": 20, "int16": 15}
_INT32_HEADROOM = 2**30


def check_operands(node: fx.Node, ctx: LoweringContext) -> tuple:
    """(a, b): a tensor first operand, a tensor or number second one."""
    a, b = node.args[0], node.args[1]
    if not isinstance(a, fx.Node):
        raise ctx.unsupported(node, "a scalar first operand", "tensor first operand")
    if not isinstance(b, (fx.Node, int, float)):
        raise ctx.unsupported(node, f"operand {b!r}", "tensor or number operands")
    return a, b


def ranked(ctx: LoweringContext, node: fx.Node, x: fx.Node) -> str:
    """``x``'s TOSA tensor at ``node``'s rank and dim order: TOSA broadcasts only between
    equal ranks, torch aligns trailing dims (a [C] bias against [N, T, C] is [1, 1, C])."""
    rank, rank_x = len(torch_shape(node)), len(torch_shape(x))
    if rank_x == rank:
        return ctx.tensor(x)
    shape = (1,) * (rank - rank_x) + tuple(torch_shape(x))
    return emit.relayout(ctx, node, ctx.tensor(x), dim_order(x), shape, dim_order(node))


def _quantized(ctx: LoweringContext, node: fx.Node, operands) -> list[QParams]:
    qparams = [ctx.qparams(x) for x in operands if isinstance(x, fx.Node)]
    if any(q is None for q in qparams):
        raise ctx.unsupported(
            node, "a float operand in a quantized graph", "both operands quantized"
        )
    return qparams


def _full(value, rank: int, dtype: str):
    return np.full((1,) * rank, value, dtype=np.float32 if dtype == "fp32" else np.int32)


def scalar_const(ctx: LoweringContext, node: fx.Node, value, dtype: str) -> str:
    """A rank-matching one-element constant (TOSA broadcasts only equal ranks)."""
    return ctx.graph.add_const(
        f"{node.name}_scalar", _full(value, len(tosa_shape(node)), dtype), dtype
    )


def is_int8_function(node: fx.Node, ctx: LoweringContext) -> bool:
    """An int8 node of one int8 tensor and numbers: a function of 256 codes (a TABLE)."""
    tensors = [x for x in node.args[:2] if isinstance(x, fx.Node)]
    if len(tensors) != 1 or ctx.qparams(node) is None or ctx.qparams(tensors[0]) is None:
        return False
    return ctx.qparams(node).dtype == ctx.qparams(tensors[0]).dtype == "int8"


def emit_add_sub(node: fx.Node, ctx: LoweringContext, op: str) -> None:
    """``op`` (ADD or SUB) of ``node``'s operands into ``node``'s output. A number may be
    either operand (``1.0 - x`` is torch's rsub, written as ``sub(1.0, x)``); ``alpha``
    multiplies the second (``torch.add(x, y, alpha=2)``): a negative one swaps ADD and SUB,
    so the widening RESCALE keeps a positive scale."""
    operands = node.args[:2]
    tensors = [x for x in operands if isinstance(x, fx.Node)]
    if not tensors or not all(isinstance(x, (fx.Node, int, float)) for x in operands):
        raise ctx.unsupported(node, f"operands {operands}", "tensors or numbers, one tensor")
    alpha = node.kwargs.get("alpha", 1)
    if not isinstance(operands[1], fx.Node):  # a number: alpha folds into it
        operands, alpha = (operands[0], operands[1] * alpha), 1
    if alpha < 0:
        op, alpha = {"ADD": "SUB", "SUB": "ADD"}[op], -alpha
    out_q = ctx.qparams(node)
    if out_q is None:  # float, or integers (int32: ``ids + 1``)
        emit_unquantized(node, ctx, op, operands, alpha)
        return
    qparams = _quantized(ctx, node, tensors)
    shift = LEFT_SHIFT[out_q.dtype]
    factors = (1, alpha)
    weighted = [q.tensor_scale * f for q, f in zip(_scales(ctx, operands), factors) if q]
    largest = max(weighted) or max(q.tensor_scale for q in qparams)
    numbers = [abs(float(x)) for x in operands if not isinstance(x, fx.Node)]
    # real value of one int32 step; coarser when a number needs it (``x - 6`` at int16)
    unit = max([2 * largest / 2**shift, *(n / 2**29 for n in numbers)])
    widened = [_widened(ctx, node, x, unit / f, f"in{i}") if f else
               scalar_const(ctx, node, 0, "int32") for i, (x, f) in
               enumerate(zip(operands, factors))]  # fmt: skip
    total = ctx.temp(node, "int32", tosa_shape(node), "int32")
    ctx.emit(op, widened, [total], node)
    narrow(ctx, node, total, unit)


def _scales(ctx: LoweringContext, operands) -> list:
    return [ctx.qparams(x) if isinstance(x, fx.Node) else None for x in operands]


def emit_unquantized(node: fx.Node, ctx: LoweringContext, op: str, operands, alpha=1) -> None:
    """Float or integer ADD/SUB/MUL; a tensor second operand times ``alpha`` first (MUL).
    int8, int16 and bool tensors (never quantized: raw integers) are computed in int32 and
    CAST back (wrapping, as torch's int8 and int16 arithmetic does): TOSA's ADD/SUB/MUL
    take int32 only."""
    narrow_to = ctx.dtype(node) if ctx.dtype(node) in ("int8", "int16") else None
    dtype = "int32" if ctx.dtype(node) == "int32" or narrow_to else "fp32"

    def operand(x):
        if not isinstance(x, fx.Node):
            return scalar_const(ctx, node, x, dtype)
        tensor = ranked(ctx, node, x)
        if dtype == "int32" and ctx.graph.tensors[tensor].dtype in ("int8", "int16", "bool"):
            tensor = emit.cast(ctx, node, tensor, "int32")
        return tensor

    def shift():
        return ctx.graph.add_const(f"{node.name}_shift", np.array([0]), "int8", any_profile=True)

    inputs = [operand(x) for x in operands]
    if op == "MUL":
        inputs.append(shift())
    if alpha != 1:
        if dtype == "int32" and float(alpha) != int(alpha):
            raise ctx.unsupported(node, f"alpha={alpha} on integers", "an integer alpha")
        scaled = ctx.temp(node, "alpha", ctx.graph.tensors[inputs[1]].shape, dtype)
        factor = scalar_const(ctx, node, int(alpha) if dtype == "int32" else alpha, dtype)
        ctx.emit("MUL", [inputs[1], factor, shift()], [scaled], node)
        inputs[1] = scaled
    if narrow_to:
        wide = ctx.temp(node, "int32", tosa_shape(node), "int32")
        ctx.emit(op, inputs, [wide], node)
        emit.cast(ctx, node, wide, narrow_to, out=ctx.define(node))
        return
    ctx.emit(op, inputs, [ctx.define(node)], node)


def _widened(ctx: LoweringContext, node: fx.Node, x, unit: float, suffix: str) -> str:
    """A tensor or number operand as int32 steps of ``unit``."""
    if isinstance(x, fx.Node):
        return widen(ctx, node, x, ctx.qparams(x).tensor_scale / unit, suffix)
    steps = round(float(x) / unit)
    if abs(steps) > _INT32_HEADROOM:
        raise ctx.unsupported(node, f"scalar {x} too large for the input's scale")
    return scalar_const(ctx, node, steps, "int32")


def widen(ctx: LoweringContext, node: fx.Node, x: fx.Node, factor: float, suffix: str) -> str:
    """``x`` as int32 ``(x - zp) * factor`` (at ``node``'s rank)."""
    q = ctx.qparams(x)
    return emit.rescale(
        ctx, node, ranked(ctx, node, x), [factor], in_zp=q.zero_point, out_zp=0,
        out_dtype="int32", suffix=suffix,
    )  # fmt: skip


def narrow(ctx: LoweringContext, node: fx.Node, total: str, unit: float) -> None:
    """RESCALE the int32 ``total`` (steps of ``unit``) into ``node``'s output."""
    out_q = ctx.qparams(node)
    emit.rescale(
        ctx, node, total, [unit / out_q.tensor_scale], in_zp=0, out_zp=out_q.zero_point,
        out_dtype=out_q.dtype, out=ctx.define(node),
    )  # fmt: skip
