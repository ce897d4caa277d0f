"""Unary element-wise functions on int8/int16 (gelu, sigmoid, tanh, exp, log, sin, acos,
erfinv, floor, round, ``x // c``, ... : the registry ``pipeline/tosa/functions/unary.py``) -> TABLE.

An int8 input has 256 possible values, so the whole function is a 256-entry lookup table:
entry ``i`` is what torch's q/dq graph computes for the input ``i - 128`` - dequantize in
float32, the node's own aten op with its own arguments, quantize with the output's qparams.
Built with torch's own kernels, the table matches the reference bit for bit, and Vela runs
an int8 TABLE on the NPU (fused into the producing operation where it can). A code whose
value lies outside the function's domain takes the value at the domain's edge
(``unary.Function.domain``).

int16 uses TOSA's interpolated form: 513 int16 entries, one per 128 input steps, and an int32
result ``(table[i] << 7) + (table[i + 1] - table[i]) * fraction``, so a RESCALE by 1/128
brings it back to the output's int16 qparams. Smooth functions are off by a fraction of an
LSB (``int16_table`` balances each interval's curvature error); steep ones near a
singularity - acosh near 1, logit near 0 and 1, log or reciprocal near 0 - by more (tens of
LSBs within a few hundred codes of it), which verification reports. Step functions (floor, round,
``x // c``) are not interpolated but computed in fixed point (``rounding.py``), nor are
hardswish and hardsigmoid, whose kinks fall between entries (``piecewise.py``).

A float program (FP profile) has no table: each function is written out in TOSA FP operators
(``emit/fp.py``, ``functions/fp_math.py``); integer tensors take the function's integer form
(``int_math.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import torch
from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext
from pipeline.tosa.emit.fp import _Float
from pipeline.quant.rules import TABLE
from pipeline.tosa.registry import Operator, lowers
from pipeline.tosa.functions.rounding import emit_step
from pipeline.tosa.functions.table_split import (
    emit_split,
    emit_split_high,
    fine_entries,
    fine_entries_above,
    split_code,
    split_high,
)
from pipeline.tosa.functions.table_zoom import CODES, FLAT, zoom_factor
from pipeline.tosa.functions.unary import FUNCTIONS, Function, step_of

TABLE_TARGETS = tuple(FUNCTIONS)
MARGIN = 1024  # int16: LSBs past the output range an entry keeps (the gain stays below 1.032)
_PLAIN = Function(float_form=None)  # pow by a number (op_pow.py) borrows the tables


def _function(node: fx.Node) -> Function:
    return FUNCTIONS.get(str(node.target), _PLAIN)


def _evaluate(node: fx.Node, real: torch.Tensor) -> torch.Tensor:
    """The node's own aten op on ``real`` (clamped into its domain) in place of its input
    (the registry's, else its only tensor argument: ``sub(1.0, x)``)."""
    fn = _function(node)
    low, high = fn.domain
    if not (math.isinf(low) and math.isinf(high)):
        real = real.clamp(low, high)
    args = list(node.args)
    index = fn.input if str(node.target) in FUNCTIONS else _tensor_index(node)
    args[index] = real
    return node.target(*args, **node.kwargs)


def _tensor_index(node: fx.Node) -> int:
    return next(i for i, a in enumerate(node.args) if isinstance(a, fx.Node))


def emit_int8_table(node: fx.Node, ctx: LoweringContext) -> None:
    """``node`` - a function of its one int8 tensor argument and numbers (``x + 0.5``,
    ``1 - x``) - as one exact TABLE."""
    x = node.args[_tensor_index(node)]
    table = int8_table(node, ctx.qparams(x), ctx.qparams(node))
    ctx.emit("TABLE", [ctx.tensor(x), ctx.const(f"{node.name}_table", table, "int8")],
             [ctx.define(node)], node)  # fmt: skip


def int8_table(node: fx.Node, x_q, out_q) -> list[int]:
    """The 256 int8 outputs of ``node`` for the int8 inputs -128..127, computed in float64 as
    verify computes the exact q/dq value (float32 would differ near a pole or a domain edge:
    tan close to pi/2, acosh of a dequantized 1.0 that float64 puts just past 1), rounded half
    to even like torch's quantize; where the function is undefined, code 0 (torch's quantize
    of NaN)."""
    inputs = torch.arange(-128, 128, dtype=torch.float64)
    real = (inputs - x_q.zero_point) * float(x_q.tensor_scale)
    outputs = _evaluate(node, real).double()
    codes = torch.round(outputs / float(out_q.tensor_scale)) + out_q.zero_point
    codes = torch.clamp(codes, out_q.qmin, out_q.qmax).nan_to_num(nan=0.0)
    return codes.to(torch.int64).tolist()


def int16_table(node: fx.Node, x_q, out_q) -> tuple[list[int], float]:
    """The 513 int16 entries of ``node`` at the int16 inputs -32768, -32640, ..., 32768, and
    the gain ``g`` they are stored divided by (the RESCALE after the TABLE multiplies it
    back: its scale is ``g / 128``).

    Linear interpolation between exact samples errs to one side over a curved interval; each
    entry is moved by a quarter of its two intervals' curvature error (``m``, the function
    minus the chord at the midpoint), so the error alternates instead, about half as large
    (asin, erfinv: rms 0.9 -> 0.6 LSB and 1.4 -> 0.8), well inside verify's bound, which
    allows twice the chord error. Entries are the function's own values (torch's, in float64
    as verify computes it), also past the output's range, up to ``MARGIN`` LSBs: the output
    of gelu, sinh or cosh leaves its calibrated range inside the first or last interval, and
    an entry clipped to int16 would bend that interval (30 LSBs off for gelu). So entries
    that would not fit are all divided by ``g <= 1 + MARGIN / 32767`` instead."""
    wanted = wanted_entries(node, x_q, out_q)
    gain = gain_of(wanted)
    return stored(wanted, gain).tolist(), gain


def wanted_entries(node: fx.Node, x_q, out_q) -> np.ndarray:
    """``int16_table``'s entries in output LSBs, before rounding and the gain (float)."""
    points = torch.arange(-32768, 32769, 64, dtype=torch.int64)  # entries and midpoints
    real = (points - x_q.zero_point).double() * x_q.tensor_scale
    outputs = _evaluate(node, real).double().nan_to_num(nan=0.0)  # torch's quantize: code 0
    scaled = (outputs / out_q.tensor_scale + out_q.zero_point).numpy()
    values = np.clip(scaled, out_q.qmin - MARGIN, out_q.qmax + MARGIN)
    entries, middles = values[::2], values[1::2]
    bend = middles - (entries[:-1] + entries[1:]) / 2
    kink = (scaled != values)[::2]  # a clipped end: a kink there, not a curve
    bend[kink[:-1] | kink[1:]] = 0.0
    shift = np.zeros(513)
    shift[:-1] += bend / 4
    shift[1:] += bend / 4
    return entries + shift


def gain_of(wanted: np.ndarray) -> float:
    return max(1.0, -wanted.min() / 32768, wanted.max() / 32767)


def stored(wanted: np.ndarray, gain: float) -> np.ndarray:
    return np.clip(np.round(wanted / gain), -32768, 32767).astype(np.int64)


def _exact_lsbs(node: fx.Node, x_q, out_q, codes: np.ndarray) -> np.ndarray:
    """The node's exact output in output LSBs, clamped to the output's range, at int16 input
    ``codes`` (fractional ones too); NaN (outside the domain) as code 0, like torch's
    quantize."""
    real = (torch.from_numpy(codes) - x_q.zero_point) * x_q.tensor_scale
    scaled = _evaluate(node, real).double() / out_q.tensor_scale + out_q.zero_point
    return scaled.clamp(out_q.qmin, out_q.qmax).nan_to_num(nan=0.0).numpy()


def _zoomed(x_q, k: int):
    return dataclasses.replace(x_q, scale=(x_q.tensor_scale / k,))


def _split(node: fx.Node, x_q, out_q):
    """(emitter, (coarse, fine) stored entries, their gain) of a table split below a code
    (``table_split.py``), or None."""
    coarse = wanted_entries(node, x_q, out_q)

    def flat(k: int) -> bool:
        codes = CODES[: int(np.ceil(32768 - 32768 / k))]
        end = _exact_lsbs(node, x_q, out_q, np.array([-32768 / k]))[0]
        return bool(np.all(np.abs(_exact_lsbs(node, x_q, out_q, codes) - end) <= FLAT))

    found = split_code(coarse, flat)
    if found is None:
        return None
    t, k = found
    fine = fine_entries(wanted_entries(node, _zoomed(x_q, k), out_q),
                        coarse[(t + 32768) // 128], t, k)  # fmt: skip
    return functools.partial(emit_split, t=t, k=k), *_stored_pair(coarse, fine)


def _split_high(node: fx.Node, x_q, out_q):
    """As ``_split``, for a table split above a code (``table_split.split_high``)."""
    coarse = wanted_entries(node, x_q, out_q)
    found = split_high(coarse, lambda codes: _exact_lsbs(node, x_q, out_q, codes))
    if found is None:
        return None
    t, k, c = found
    # the fine table's input u = k * (x + c): real = (u - k * (c + zp)) * scale / k
    fine_q = dataclasses.replace(_zoomed(x_q, k), zero_point=k * (c + x_q.zero_point))
    index = (k * (t + c) + 32768) // 128  # the fine entry at t
    fine = fine_entries_above(wanted_entries(node, fine_q, out_q), coarse[(t + 32768) // 128],
                              index)  # fmt: skip
    return functools.partial(emit_split_high, t=t, k=k, c=c), *_stored_pair(coarse, fine)


def _stored_pair(coarse: np.ndarray, fine: np.ndarray):
    gain = max(gain_of(coarse), gain_of(fine))
    return (stored(coarse, gain).tolist(), stored(fine, gain).tolist()), gain


def _int16(node: fx.Node, ctx: LoweringContext, x_q, out_q) -> None:
    if _function(node).int16 is not None:
        _function(node).int16(node, ctx, x_q, out_q)
        return
    step = step_of(node) if _function(node).rounding else None
    if step is not None:
        emit_step(node, ctx, step, x_q, out_q)
        return
    x = ctx.tensor(node.args[_function(node).input])
    zoom = zoom_factor(lambda codes: _exact_lsbs(node, x_q, out_q, codes))
    split = None
    if zoom == 1:  # steep at one end: a second, zoomed table there (table_split.py)
        split = _split(node, x_q, out_q) if x_q.zero_point == 0 else None
        split = split or _split_high(node, x_q, out_q)
    if split is not None:
        place, entries, gain = split
        tables = tuple(ctx.const(f"{node.name}_table", e, "int16") for e in entries)
        wide = place(ctx, node, x, tables)
    else:
        if zoom > 1 and x_q.zero_point == 0:  # flat beyond an interval: table_zoom.py
            x = emit.rescale(ctx, node, x, [zoom], in_zp=0, out_zp=0, out_dtype="int16",
                             suffix="zoomed")  # fmt: skip
            x_q = _zoomed(x_q, zoom)
        entries, gain = int16_table(node, x_q, out_q)
        table = ctx.const(f"{node.name}_table", entries, "int16")
        wide = ctx.temp(node, "interpolated", ctx.graph.tensors[x].shape, "int32")
        ctx.emit("TABLE", [x, table], [wide], node)
    emit.rescale(
        ctx, node, wide, [gain / 128], in_zp=0, out_zp=0, out_dtype="int16", out=ctx.define(node)
    )


def _float(node: fx.Node, ctx: LoweringContext, fn: Function) -> None:
    x = ctx.tensor(node.args[fn.input])
    fn.float_form(_Float(ctx, node, ctx.graph.tensors[x].dtype), x, ctx.define(node))


@lowers(*TABLE_TARGETS)
def visit_table(node: fx.Node, ctx: LoweringContext) -> None:
    fn = _function(node)
    x = node.args[fn.input]
    if not isinstance(x, fx.Node):
        raise ctx.unsupported(node, f"a number operand {x!r}", "a tensor operand")
    x_q, out_q = ctx.qparams(x), ctx.qparams(node)
    if x_q is None and out_q is None and ctx.dtype(x) in ("int32", "int16", "int8", "bool"):
        if fn.integer is None:
            raise ctx.unsupported(node, f"a {ctx.dtype(x)} input", "a float input")
        fn.integer(node, ctx)
        return
    if x_q is None and out_q is None:  # FP profile: the function in float operators
        _float(node, ctx, fn)
        return
    types = (x_q.dtype if x_q else "float", out_q.dtype if out_q else "float")
    if types == ("int16", "int16"):
        _int16(node, ctx, x_q, out_q)
        return
    if types != ("int8", "int8"):
        got = " -> ".join(types)
        raise ctx.unsupported(node, f"types {got}", "int8 -> int8 or int16 -> int16 (TABLE)")
    emit_int8_table(node, ctx)


OPERATOR = Operator(
    "unary functions (gelu, sigmoid, exp, ...) -> one TABLE (int16: interpolated); FP: float forms",
    quant=TABLE,
)
