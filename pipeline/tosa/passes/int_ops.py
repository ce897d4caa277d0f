"""Integer operators a TOSA pass inserts before the operator it replaces (``anchor``): the
shared vocabulary of the Ethos-U55/U65 rewrites of GATHER and of bool tensors.

Every helper adds one operator (TOSA 1.0 PRO-INT types: ADD/SUB/MUL/MINIMUM/MAXIMUM/ABS on
int32, RESCALE between integer types) and returns its output tensor's name.
"""

from __future__ import annotations

import numpy as np

from pipeline.tosa.graph import Operator, TosaGraph
from pipeline.tosa.quant_math import encode_scale

MAX_SPREAD = 1 << 16  # elements: a broadcast constant up to this size is stored full-size


def shape_of(graph: TosaGraph, name: str) -> tuple[int, ...]:
    return graph.tensors[name].shape


def const(graph: TosaGraph, hint: str, data, dtype: str) -> str:
    return graph.add_const(hint, np.asarray(data), dtype)


def scalar(graph: TosaGraph, hint: str, value: int, rank: int, dtype: str = "int32") -> str:
    """A one-element constant of ``rank`` (broadcast by the elementwise operators)."""
    return const(graph, hint, np.full((1,) * rank, value), dtype)


def broadcast_shape(graph: TosaGraph, a: str, b: str) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(shape_of(graph, a), shape_of(graph, b)))


def binary(graph: TosaGraph, anchor: Operator, op: str, a: str, b: str, hint: str,
           out: str | None = None) -> str:
    """``op`` (ADD, SUB, MUL, MINIMUM, MAXIMUM) of int32 ``a`` and ``b`` (broadcast)."""
    shape = broadcast_shape(graph, a, b)
    out = out or graph.add_tensor(hint, shape, "int32")
    inputs = [_spread(graph, a, b, shape), _spread(graph, b, a, shape)]
    attrs = {"nan_mode": "PROPAGATE"} if op in ("MINIMUM", "MAXIMUM") else {}
    if op == "MUL":
        inputs.append(graph.add_const(f"{hint}_shift", np.array([0]), "int8", any_profile=True))
    return graph.insert_before(anchor, op, inputs, out, **attrs)


def _spread(graph: TosaGraph, x: str, other: str, shape: tuple[int, ...]) -> str:
    """A constant ``x`` at the output's shape when both operands would broadcast: Vela
    broadcasts one operand of an Ethos-U55 elementwise operator and copies the other out
    first (a full-size extra operator), so the constant is stored broadcast instead."""
    data = graph.tensors[x].data
    if data is None or shape_of(graph, x) == shape or shape_of(graph, other) == shape:
        return x
    if int(np.prod(shape)) > MAX_SPREAD:
        return x
    return const(graph, f"{x}_spread", np.broadcast_to(data, shape).copy(), graph.tensors[x].dtype)


def unary(graph: TosaGraph, anchor: Operator, op: str, x: str, hint: str) -> str:
    """``op`` (ABS) of int32 ``x``."""
    out = graph.add_tensor(hint, shape_of(graph, x), "int32")
    return graph.insert_before(anchor, op, [x], out)


def clamp01(graph: TosaGraph, anchor: Operator, x: str, low: int, hint: str) -> str:
    """``min(max(x, low), low + 1) - low``: 1 where int32 ``x > low``, else 0. No value
    overflows (``low`` < INT32_MAX)."""
    rank = len(shape_of(graph, x))
    up = binary(graph, anchor, "MAXIMUM", x, scalar(graph, f"{hint}_lo", low, rank), f"{hint}_max")
    top = scalar(graph, f"{hint}_hi", low + 1, rank)
    down = binary(graph, anchor, "MINIMUM", up, top, f"{hint}_min")
    return binary(graph, anchor, "SUB", down, scalar(graph, f"{hint}_off", low, rank), hint)


def rescale(graph: TosaGraph, anchor: Operator, x: str, dtype: str, hint: str,
            out: str | None = None, out_zp: int = 0) -> str:
    """RESCALE of integer ``x`` by 1 into ``dtype`` (saturating): exact where it fits."""
    src = graph.tensors[x]
    out = out or graph.add_tensor(hint, src.shape, dtype)
    bits = 16 if src.dtype == "int48" else 32  # TOSA: a 16-bit multiplier for int48
    multiplier, shift = encode_scale(1.0, bits)
    inputs = [
        x,
        graph.add_const(f"{hint}_multiplier", [multiplier], f"int{bits}"),
        graph.add_const(f"{hint}_shift", [shift], "int8"),
        graph.add_const(f"{hint}_input_zp", [0], src.dtype),
        graph.add_const(f"{hint}_output_zp", [out_zp], graph.tensors[out].dtype),
    ]
    return graph.insert_before(anchor, "RESCALE", inputs, out, scale32=bits == 32,
                               rounding_mode=graph.spec.rounding_mode, per_channel=False,
                               input_unsigned=False, output_unsigned=False)  # fmt: skip


def widen(graph: TosaGraph, anchor: Operator, x: str, hint: str) -> str:
    """An int8/int16 tensor as int32 (CAST up, which Ethos-U55 runs)."""
    if graph.tensors[x].dtype == "int32":
        return x
    out = graph.add_tensor(hint, shape_of(graph, x), "int32")
    return graph.insert_before(anchor, "CAST", [x], out)


def reshape(graph: TosaGraph, anchor: Operator, x: str, shape, hint: str,
            out: str | None = None) -> str:
    out = out or graph.add_tensor(hint, tuple(shape), graph.tensors[x].dtype)
    new_shape = graph.add_const(f"{hint}_shape", list(shape), "shape")
    return graph.insert_before(anchor, "RESHAPE", [x, new_shape], out)
