"""Ethos-U55/U65: bool tensors become int32 0/1 and the operators on them integer arithmetic.

Vela 5.2 places no comparison, logical operator, SELECT or bool tensor on Ethos-U55/U65 -
what an attention mask built in the model (``masked_fill(mask == 0, ...)``, HF's ``where``)
is made of. Here every bool tensor holds 0 (false) or 1 (true) in int32, which MINIMUM,
MAXIMUM, ABS, ADD/SUB/MUL and the memory operators (RESHAPE, SLICE, TILE, ...) take, so the
results are the bools' integers exactly:

* ``x > c`` (``c`` a constant) is ``min(max(x, c), c + 1) - c``; ``x >= c``, ``c > x``,
  ``c >= x`` and ``x == c`` (``1 - |min(max(x, c - 1), c + 1) - c|``) likewise - no value
  overflows. Two tensors compare through ``d = a - b``: ``min(max(d, 0), 1)`` for ``>``,
  ``1 - min(|d|, 1)`` for ``==`` (exact while ``a - b`` fits int32: codes, bools and ids).
* and/or/xor/not: MINIMUM, MAXIMUM, ``|a - b|``, ``1 - a``.
* ``SELECT(c, a, b)`` is ``b + c * (a - b)`` in int32 (MUL by 0 or 1 is exact), RESCALEd by
  1 to the output type; where ``a`` and ``b`` are constants (an additive mask being built)
  only the condition's shape is computed. A fill at the type's minimum (maximum) - where a
  -1e9 fill saturates - is ``x - c * 2**16`` (``+``), which the RESCALE saturates exactly
  there: fewer full-size operators.
* CAST to bool is ``|min(max(x, -1), 1)|``; from bool a RESCALE by 1 (int32: IDENTITY).

Left alone (whole graphs, so none is half rewritten): graphs with a bool input or output
(int8 0/1 there would be torch's bytes, but the verify stage feeds and reads them as bools)
or a bool operator not named here (REDUCE_ANY/REDUCE_ALL).
"""

from __future__ import annotations

import numpy as np

from pipeline.tosa.graph import Operator, TosaGraph
from pipeline.tosa.passes import int_ops
from pipeline.tosa.quant_math import DTYPE_RANGES

SATURATE = 1 << 16  # moves any int8/int16 value past its type's range
INT32_MIN, INT32_MAX = DTYPE_RANGES["int32"]


def _scalar_value(graph: TosaGraph, name: str) -> int | None:
    """The value of a one-element constant (the lowering's bounds and fills), else None."""
    data = graph.tensors[name].data
    return None if data is None or data.size != 1 else int(data.reshape(-1)[0])


def _window(graph: TosaGraph, op: Operator, x: str, low: int, hint: str) -> str:
    """``min(max(x, low), low + 1)``: ``low`` where ``x <= low``, else ``low + 1``."""
    rank = len(graph.tensors[x].shape)
    up = int_ops.binary(graph, op, "MAXIMUM", x, int_ops.scalar(graph, f"{hint}_lo", low, rank),
                        f"{hint}_max")  # fmt: skip
    top = int_ops.scalar(graph, f"{hint}_hi", low + 1, rank)
    return int_ops.binary(graph, op, "MINIMUM", up, top, f"{hint}_min")


def _sub(graph, op, a_value: int | str, b_value: int | str, rank: int, hint: str, out=None):
    """``a - b`` where either may be a number."""
    a, b = (int_ops.scalar(graph, f"{hint}_k", v, rank) if isinstance(v, int) else v
            for v in (a_value, b_value))  # fmt: skip
    return int_ops.binary(graph, op, "SUB", a, b, hint, out=out)


def _constant(graph: TosaGraph, op: Operator, x: str, value: int, rank: int, out: str) -> None:
    """``out``: ``value`` everywhere (``x - x + value``, no overflow)."""
    zero = int_ops.binary(graph, op, "SUB", x, x, f"{out}_zero")
    int_ops.binary(graph, op, "ADD", zero, int_ops.scalar(graph, f"{out}_k", value, rank),
                   f"{out}_k", out=out)  # fmt: skip


def _greater(graph: TosaGraph, op: Operator, equal_too: bool) -> None:
    (a, b), out = op.inputs, op.outputs[0]
    rank = len(graph.tensors[out].shape)
    ca, cb = _scalar_value(graph, a), _scalar_value(graph, b)
    if ca is not None or cb is not None:
        # x > low (x is a) or x <= low (x is b): x > c is low = c, x >= c low = c - 1,
        # c > x is x <= c - 1 and c >= x x <= c
        x, low = (a, cb - equal_too) if cb is not None else (b, ca - (not equal_too))
        if not INT32_MIN <= low < INT32_MAX:  # always or never: the lowering's bounds
            _constant(graph, op, x, int((low < INT32_MIN) == (x == a)), rank, out)
        elif x == a:
            _sub(graph, op, _window(graph, op, a, low, out), low, rank, f"{out}_gt", out)
        else:
            _sub(graph, op, low + 1, _window(graph, op, b, low, out), rank, f"{out}_le", out)
    else:  # d >= 1, or d >= 0 as d + 1 >= 1
        d = int_ops.binary(graph, op, "SUB", a, b, f"{out}_diff")
        if equal_too:
            d = int_ops.binary(graph, op, "ADD", d, int_ops.scalar(graph, f"{out}_one", 1, rank),
                               f"{out}_diff1")  # fmt: skip
        up = int_ops.binary(graph, op, "MAXIMUM", d, int_ops.scalar(graph, f"{out}_z", 0, rank),
                            f"{out}_max")  # fmt: skip
        int_ops.binary(graph, op, "MINIMUM", up, int_ops.scalar(graph, f"{out}_o", 1, rank),
                       f"{out}_min", out=out)  # fmt: skip


def _equal(graph: TosaGraph, op: Operator) -> None:
    (a, b), out = op.inputs, op.outputs[0]
    rank = len(graph.tensors[out].shape)
    ca, cb = _scalar_value(graph, a), _scalar_value(graph, b)
    if ca is not None or cb is not None:  # |min(max(x, c - 1), c + 1) - c| is 0 or 1
        x, c = (b, ca) if cb is None else (a, cb)
        up = int_ops.binary(graph, op, "MAXIMUM", x, int_ops.scalar(
            graph, f"{out}_lo", max(c - 1, INT32_MIN), rank), f"{out}_max")  # fmt: skip
        near = int_ops.binary(graph, op, "MINIMUM", up, int_ops.scalar(
            graph, f"{out}_hi", min(c + 1, INT32_MAX), rank), f"{out}_min")  # fmt: skip
        size = int_ops.unary(graph, op, "ABS", _sub(graph, op, near, c, rank, f"{out}_diff"),
                             f"{out}_ne")  # fmt: skip
    else:
        d = int_ops.binary(graph, op, "SUB", a, b, f"{out}_diff")
        size = int_ops.binary(graph, op, "MINIMUM", int_ops.unary(
            graph, op, "ABS", d, f"{out}_abs"), int_ops.scalar(graph, f"{out}_o", 1, rank),
            f"{out}_ne")  # fmt: skip
    _sub(graph, op, 1, size, rank, f"{out}_eq", out)


def _logical(graph: TosaGraph, op: Operator) -> None:
    out = op.outputs[0]
    if op.op == "LOGICAL_NOT":
        _sub(graph, op, 1, op.inputs[0], len(graph.tensors[out].shape), f"{out}_not", out)
    elif op.op == "LOGICAL_XOR":
        d = int_ops.binary(graph, op, "SUB", *op.inputs, f"{out}_diff")
        graph.insert_before(op, "ABS", [d], out)
    else:
        which = "MINIMUM" if op.op == "LOGICAL_AND" else "MAXIMUM"
        int_ops.binary(graph, op, which, *op.inputs, f"{out}_{which.lower()}", out=out)


def _select(graph: TosaGraph, op: Operator) -> None:
    (c, a, b), out = op.inputs, op.outputs[0]
    dtype, rank = graph.tensors[out].dtype, len(graph.tensors[out].shape)
    low, high = DTYPE_RANGES.get(dtype, (None, None))
    ca, cb = _scalar_value(graph, a), _scalar_value(graph, b)
    wide = out if dtype == "int32" else graph.add_tensor(f"{out}_wide", graph.tensors[out].shape,
                                                         "int32")  # fmt: skip
    if ca is not None and cb is not None:  # b + c * (a - b), all on the condition's shape
        step = int_ops.scalar(graph, f"{out}_step", ca - cb, rank)
        picked = int_ops.binary(graph, op, "MUL", c, step, f"{out}_picked")
        int_ops.binary(graph, op, "ADD", picked, int_ops.scalar(graph, f"{out}_b", cb, rank),
                       f"{out}_sum", out=wide)  # fmt: skip
    elif dtype != "int32" and {ca, cb} & {low, high} and None in (ca, cb):
        # a fill at the type's bound: push the other value past it where it is chosen
        fill, x = (ca, b) if ca is not None else (cb, a)
        shift = SATURATE if fill == high else -SATURATE
        if ca is None:  # the fill is b's: chosen where c is 0, i.e. by 1 - c
            c = _sub(graph, op, 1, c, rank, f"{out}_not")
        push = int_ops.binary(graph, op, "MUL", c, int_ops.scalar(graph, f"{out}_push", shift,
                                                                  rank), f"{out}_push")  # fmt: skip
        x32 = int_ops.widen(graph, op, x, f"{out}_x32")
        int_ops.binary(graph, op, "ADD", x32, push, f"{out}_sum", out=wide)
    else:
        a32, b32 = (int_ops.widen(graph, op, v, f"{out}_{k}32") for k, v in (("a", a), ("b", b)))
        d = int_ops.binary(graph, op, "SUB", a32, b32, f"{out}_diff")
        picked = int_ops.binary(graph, op, "MUL", c, d, f"{out}_picked")
        int_ops.binary(graph, op, "ADD", b32, picked, f"{out}_sum", out=wide)
    if wide != out:
        int_ops.rescale(graph, op, wide, dtype, f"{out}_narrow", out=out)


def _cast(graph: TosaGraph, op: Operator, bools: set[str]) -> None:
    x, out = op.inputs[0], op.outputs[0]
    if x in bools:  # from 0/1
        if graph.tensors[out].dtype == "int32":
            graph.insert_before(op, "IDENTITY", [x], out)
        else:
            int_ops.rescale(graph, op, x, graph.tensors[out].dtype, f"{out}_narrow", out=out)
        return
    rank = len(graph.tensors[out].shape)  # to bool: |min(max(x, -1), 1)|
    x32 = int_ops.widen(graph, op, x, f"{out}_x32")
    up = int_ops.binary(graph, op, "MAXIMUM", x32, int_ops.scalar(graph, f"{out}_lo", -1, rank),
                        f"{out}_max")  # fmt: skip
    sign = int_ops.binary(graph, op, "MINIMUM", up, int_ops.scalar(graph, f"{out}_hi", 1, rank),
                          f"{out}_sign")  # fmt: skip
    graph.insert_before(op, "ABS", [sign], out)


RULES = {
    "EQUAL": _equal,
    "GREATER": lambda g, o: _greater(g, o, equal_too=False),
    "GREATER_EQUAL": lambda g, o: _greater(g, o, equal_too=True),
    **dict.fromkeys(("LOGICAL_AND", "LOGICAL_OR", "LOGICAL_XOR", "LOGICAL_NOT"), _logical),
    "SELECT": _select,
}


# Operators that only move values: they take int32 0/1 as they took bools.
MOVES = frozenset({"RESHAPE", "SLICE", "TILE", "TRANSPOSE", "CONCAT", "PAD", "IDENTITY"})


def _retype(graph: TosaGraph) -> set[str]:
    """Every bool tensor as int32 0/1; returns the names that were bool (none when a graph
    input or output is bool - the verify stage feeds and reads those as bools - or an
    operator this pass does not rewrite reads or writes one: REDUCE_ANY, ...)."""
    bools = {n for n, t in graph.tensors.items() if t.dtype == "bool"}
    others = {o.op for o in graph.operators if bools & {*o.inputs, *o.outputs}}
    if bools & {*graph.inputs, *graph.outputs} or others - {*RULES, *MOVES, "CAST"}:
        return set()
    for name in bools:
        tensor = graph.tensors[name]
        tensor.dtype = "int32"
        if tensor.data is not None:
            tensor.data = tensor.data.astype(np.int32)
    return bools


def run(graph: TosaGraph) -> None:
    bools = _retype(graph)
    if not bools:
        return
    for op in list(graph.operators):
        if op.op in RULES:
            RULES[op.op](graph, op)
        elif op.op == "CAST" and (op.inputs[0] in bools) != (op.outputs[0] in bools):
            _cast(graph, op, bools)
        else:
            continue
        graph.operators.remove(op)
    graph.remove_unused_tensors()
