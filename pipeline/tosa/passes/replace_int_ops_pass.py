"""Ethos-U55/U65: integer shifts and bitwise operators with a constant, in operators Vela 5.2
places there (int32 ADD/SUB, int32 LOGICAL_LEFT_SHIFT, ARITHMETIC_RIGHT_SHIFT with round=True).

Vela runs no BITWISE_* on Ethos-U55/U65 and only the rounding right shift, while torch's
``x >> k`` floors. Every rewrite gives the same int32 values:

* ``x >> k`` (floor) is ``round_shift(x - 2**(k-1), k)``: rounding half up after taking
  half a step off is flooring (exact for ``x >= -2**31 + 2**(k-1)``). A shift by a tensor
  ``s`` takes ``2**s - round_shift(2**s, 1)`` off, which is ``2**(s-1)``, and 0 for ``s = 0``.
* ``~x`` is ``-1 - x``.
* ``x & c`` for a constant ``c``: per run of set bits ``[lo, hi)`` of ``c``, the field
  ``(x >> lo) - ((x >> hi) << (hi - lo))`` moved back by ``<< lo`` (a run reaching bit 31
  is ``(x >> lo) << lo``), or ``x - (x & ~c)`` if ``~c`` has fewer runs; with ``a = x & c``,
  ``x | c`` is ``(x - a) + c`` and ``x ^ c`` is ``(x - a) + (c - a)``, sums of disjoint
  bits that never overflow.

* ``x << k`` of int8/int16 (Vela shifts int32 only there) wraps like torch's: the int32
  ``v = x << k`` less its bits past the type's width, ``v - ((v + 2**(b-1)) >> b << b)``.

int8/int16 operands are widened (CAST) and the result RESCALEd back by 1 (it fits: a shift
right, a mask of the type's own bits, a wrapped left shift). Left to the pre-Vela check:
bitwise operators of two tensors, INTDIV (division by a tensor).
"""

from __future__ import annotations

from pipeline.tosa.graph import Operator, TosaGraph
from pipeline.tosa.passes import int_ops

_BITWISE = ("BITWISE_AND", "BITWISE_OR", "BITWISE_XOR")


def _constant(graph: TosaGraph, name: str) -> int | None:
    data = graph.tensors[name].data
    return None if data is None or data.size != 1 else int(data.reshape(-1)[0])


def _floor_shift(graph: TosaGraph, op: Operator, x: str, k, hint: str, full: bool) -> str:
    """``x >> k`` (floor) for a number or int32 tensor ``k``, with the rounding shift. A
    ``full``-range int32 ``x`` is first raised to at least ``-2**31 + 2**(k-1)`` (MAXIMUM), so
    taking the half step off cannot overflow; the values raised all floor to ``-2**(31-k)``
    either way."""
    rank = len(graph.tensors[x].shape)
    if isinstance(k, int):
        if k == 0:
            return x
        if full:
            floor = int_ops.scalar(graph, f"{hint}_low", -(1 << 31) + (1 << (k - 1)), rank)
            x = int_ops.binary(graph, op, "MAXIMUM", x, floor, f"{hint}_raised")
        x = int_ops.binary(graph, op, "ADD", x, int_ops.scalar(graph, f"{hint}_h", -(1 << (k - 1)),
                                                               rank), f"{hint}_less")  # fmt: skip
        k = int_ops.scalar(graph, f"{hint}_k", k, rank)
    else:  # half = 2**k - round_shift(2**k, 1)
        power = _op(graph, op, "LOGICAL_LEFT_SHIFT", int_ops.scalar(graph, f"{hint}_1", 1, rank), k,
                    f"{hint}_pow", graph.tensors[k].shape)  # fmt: skip
        halved = _op(graph, op, "ARITHMETIC_RIGHT_SHIFT", power,
                     int_ops.scalar(graph, f"{hint}_one", 1, rank), f"{hint}_halved",
                     graph.tensors[k].shape, round=True)  # fmt: skip
        half = int_ops.binary(graph, op, "SUB", power, halved, f"{hint}_half")
        if full:
            lowest = int_ops.scalar(graph, f"{hint}_min", -(1 << 31), rank)
            floor = int_ops.binary(graph, op, "ADD", lowest, half, f"{hint}_low")
            x = int_ops.binary(graph, op, "MAXIMUM", x, floor, f"{hint}_raised")
        x = int_ops.binary(graph, op, "SUB", x, half, f"{hint}_less")
    shape = int_ops.broadcast_shape(graph, x, k)
    return _op(graph, op, "ARITHMETIC_RIGHT_SHIFT", x, k, f"{hint}_floor", shape, round=True)


def _op(graph, anchor, op, a, b, hint, shape, **attrs) -> str:
    out = graph.add_tensor(hint, shape, "int32")
    return graph.insert_before(anchor, op, [a, b], out, **attrs)


def _left(graph: TosaGraph, op: Operator, x: str, k: int, hint: str) -> str:
    if k == 0:
        return x
    rank = len(graph.tensors[x].shape)
    return _op(graph, op, "LOGICAL_LEFT_SHIFT", x, int_ops.scalar(graph, f"{hint}_k", k, rank),
               hint, graph.tensors[x].shape)  # fmt: skip


def _wrapped_left(graph: TosaGraph, op: Operator, x: str, k, bits: int, hint: str) -> str:
    """``x << k`` (int32 ``x`` of a ``bits``-wide type, a number or int32 tensor ``k``)
    wrapped into that type's range, as int32."""
    rank = len(graph.tensors[x].shape)
    if isinstance(k, int):
        shifted = _left(graph, op, x, k, f"{hint}_v")
    else:
        shifted = _op(graph, op, "LOGICAL_LEFT_SHIFT", x, k, f"{hint}_v",
                      int_ops.broadcast_shape(graph, x, k))  # fmt: skip
    half = int_ops.scalar(graph, f"{hint}_half", 1 << (bits - 1), rank)
    biased = int_ops.binary(graph, op, "ADD", shifted, half, f"{hint}_biased")
    over = _left(graph, op, _floor_shift(graph, op, biased, bits, f"{hint}_over", False), bits,
                 f"{hint}_over_up")  # fmt: skip
    return int_ops.binary(graph, op, "SUB", shifted, over, f"{hint}_wrapped")


def _runs(mask: int) -> list[tuple[int, int]]:
    """The runs of set bits ``[lo, hi)`` of a 32-bit mask."""
    bits = [(mask >> i) & 1 for i in range(32)] + [0]
    return [(i, next(j for j in range(i, 33) if not bits[j]))
            for i in range(32) if bits[i] and (i == 0 or not bits[i - 1])]  # fmt: skip


def _and(graph: TosaGraph, op: Operator, x: str, mask: int, hint: str, full: bool) -> str:
    """``x & mask`` (int32 ``x``, constant ``mask``) from shifts, ADD and SUB: per run of
    the mask's bits, or ``x - (x & ~mask)`` when the complement has fewer runs."""
    mask &= 0xFFFFFFFF
    if len(_runs(~mask & 0xFFFFFFFF)) < len(_runs(mask)):
        return int_ops.binary(graph, op, "SUB", x, _and(graph, op, x, ~mask, f"{hint}_not", full),
                              f"{hint}_diff")  # fmt: skip
    total = None
    for lo, hi in _runs(mask):
        low = _floor_shift(graph, op, x, lo, f"{hint}_{lo}", full)
        if hi < 32:
            high = _left(graph, op, _floor_shift(graph, op, x, hi, f"{hint}_{hi}", full), hi - lo,
                         f"{hint}_{hi}_up")  # fmt: skip
            low = int_ops.binary(graph, op, "SUB", low, high, f"{hint}_{lo}_field")
        field = _left(graph, op, low, lo, f"{hint}_{lo}_back")
        total = field if total is None else int_ops.binary(graph, op, "ADD", total, field,
                                                           f"{hint}_{lo}_sum")  # fmt: skip
    if total is None:  # no bit set: x - x
        total = int_ops.binary(graph, op, "SUB", x, x, f"{hint}_none")
    return total


def _signed(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _bitwise(graph: TosaGraph, op: Operator, x: str, c: int, hint: str, full: bool) -> str:
    """AND, OR or XOR of int32 ``x`` with a constant from ``a = x & c``: ``x | c`` is
    ``(x - a) + c`` and ``x ^ c`` is ``(x - a) + (c - a)``; each term a set of bits
    disjoint from the other's, so no operator overflows."""
    rank = len(graph.tensors[x].shape)
    both = _and(graph, op, x, c, f"{hint}_both", full)
    if op.op == "BITWISE_AND":
        return both
    rest = int_ops.binary(graph, op, "SUB", x, both, f"{hint}_rest")  # x & ~c
    constant = int_ops.scalar(graph, f"{hint}_c", _signed(c), rank)
    if op.op == "BITWISE_XOR":
        constant = int_ops.binary(graph, op, "SUB", constant, both, f"{hint}_flip")  # ~x & c
    return int_ops.binary(graph, op, "ADD", rest, constant, f"{hint}_or")


def _rewrite(graph: TosaGraph, op: Operator) -> str | None:
    """The int32 result of ``op`` in U55 operators, or None to leave it."""
    out = op.outputs[0]
    if op.op == "ARITHMETIC_RIGHT_SHIFT" and not op.attrs.get("round", False):
        x, k = op.inputs
        amount = _constant(graph, k)
        x32 = int_ops.widen(graph, op, x, f"{out}_x32")
        shift = amount if amount is not None else int_ops.widen(graph, op, k, f"{out}_k32")
        return _floor_shift(graph, op, x32, shift, out, graph.tensors[x].dtype == "int32")
    if op.op == "LOGICAL_LEFT_SHIFT":
        bits = {"int8": 8, "int16": 16}.get(graph.tensors[out].dtype)
        if bits is None:
            return None
        x, k = op.inputs
        amount = _constant(graph, k)
        x32 = int_ops.widen(graph, op, x, f"{out}_x32")
        shift = amount if amount is not None else int_ops.widen(graph, op, k, f"{out}_k32")
        return _wrapped_left(graph, op, x32, shift, bits, out)
    if op.op == "BITWISE_NOT":
        x32 = int_ops.widen(graph, op, op.inputs[0], f"{out}_x32")
        rank = len(graph.tensors[x32].shape)
        return int_ops.binary(graph, op, "SUB", int_ops.scalar(graph, f"{out}_m1", -1, rank),
                              x32, f"{out}_not")  # fmt: skip
    if op.op in _BITWISE:
        a, b = op.inputs
        constants = [_constant(graph, a), _constant(graph, b)]
        if constants[1] is None and constants[0] is None:
            return None
        x, c = (a, constants[1]) if constants[1] is not None else (b, constants[0])
        full = graph.tensors[x].dtype == "int32"
        return _bitwise(graph, op, int_ops.widen(graph, op, x, f"{out}_x32"), c, out, full)
    return None


def run(graph: TosaGraph) -> None:
    for op in list(graph.operators):
        if op.op not in ("ARITHMETIC_RIGHT_SHIFT", "LOGICAL_LEFT_SHIFT", "BITWISE_NOT", *_BITWISE):
            continue
        if graph.tensors[op.outputs[0]].dtype not in ("int8", "int16", "int32"):
            continue
        result = _rewrite(graph, op)
        if result is None:
            continue
        out = op.outputs[0]
        producer = graph.producer(result)
        if graph.tensors[out].dtype == "int32" and producer is not None and producer is not op:
            producer.outputs = [out]  # the last new operator writes the output itself
            graph.replace_uses(result, out)
        elif graph.tensors[out].dtype == "int32":
            graph.insert_before(op, "IDENTITY", [result], out)
        else:
            int_ops.rescale(graph, op, result, graph.tensors[out].dtype, f"{out}_narrow", out=out)
        graph.operators.remove(op)
    graph.remove_unused_tensors()

