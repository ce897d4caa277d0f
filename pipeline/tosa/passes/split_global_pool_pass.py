"""Ethos-U55/U65: a global int8 AVG_POOL2D becomes two exact depthwise sums and one RESCALE.

A pool whose kernel covers the whole input has one output position, and Vela spreads no
work over positions then: on Ethos-U55-128 an 8x8x64 global pool costs 3,160 cycles (Vela
5.2's per-operator figure). Summing each column first (DEPTHWISE_CONV2D, kernel Hx1,
weights 1 -> one int32 sum per column and channel, narrowed to int16 without loss), then
the row of column sums (DEPTHWISE_CONV2D 1xW on int16 -> int48), and dividing once in the
final RESCALE costs 2,170. ``benchmarks/bench_global_pool.py`` measures both forms: on U55
better from 7x7 inputs up (0.82-0.93x), worse below; on Ethos-U85 mostly worse (up to
1.6x), so the rewrite only runs in the U55/U65 variant and only from ``MIN_CELLS`` input
cells. It costs a little flash: the encoded all-ones weights (160 bytes for 8x8x64).

Bit-exact with the pool it replaces, or not applied: the sums are exact (the column sums
must fit int16 for the input's zero point), and the division must be one TOSA allows on an
int48 value - a 16-bit multiplier. The pass looks for a multiplier and shift that give
AVG_POOL2D's own result (its ``reciprocal_scale`` division and rounding) for every sum the
input can produce, checking them all; for some sizes none exists (12x12, 16x16) and the pool
stays. Needs int16 tensors (``+int16`` in the TOSA spec).
"""

from __future__ import annotations

import numpy as np

from pipeline.tosa.graph import Operator, TosaGraph
from pipeline.tosa.quant_math import encode_scale

MIN_CELLS = 49  # H * W below this is cheaper as one AVG_POOL2D on U55-128 (measured)
INT16_MAX = 32767


def _zp(graph: TosaGraph, name: str) -> int:
    return int(graph.tensors[name].data.reshape(-1)[0])


def _pool_division(sums: np.ndarray, count: int) -> np.ndarray:
    """AVG_POOL2D's integer division of ``sums`` by ``count`` (TOSA 1.0: ``reciprocal_scale``
    then ``apply_scale_32`` without double rounding)."""
    k = (count - 1).bit_length()
    multiplier, shift = (((1 << 30) + 1) << k) // count, 30 + k
    return (sums * multiplier + (1 << (shift - 1))) >> shift


def matching_scale(count: int, low: int, high: int) -> tuple[int, int] | None:
    """A 16-bit RESCALE (multiplier, shift) equal to AVG_POOL2D's division by ``count`` for
    every sum in ``[low, high]``, or None."""
    sums = np.arange(low, high + 1, dtype=np.int64)
    want = _pool_division(sums, count)
    for shift in range(2, 63):
        near = (1 << shift) / count
        candidates = {int(np.floor(near)), int(np.ceil(near)), int(np.ceil(near)) + 1}
        for multiplier in sorted(candidates):
            if not (1 << 14) <= multiplier < (1 << 15):
                continue
            if np.array_equal((sums * multiplier + (1 << (shift - 1))) >> shift, want):
                return multiplier, shift
    return None


def _plan(graph: TosaGraph, op: Operator) -> tuple[int, int] | None:
    """The final RESCALE's (multiplier, shift) when ``op`` is a global pool worth splitting."""
    x, out = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if x.dtype != "int8" or len(x.shape) != 4 or not graph.spec.supports_dtype("int16"):
        return None
    _, h, w, _ = x.shape
    if (
        list(op.attrs["kernel"]) != [h, w]
        or any(op.attrs["pad"])
        or out.shape[1:3] != (1, 1)
        or min(h, w) < 2
        or h * w < MIN_CELLS
    ):
        return None
    zp = _zp(graph, op.inputs[1])
    low, high = -128 - zp, 127 - zp  # x - zp over every int8 x
    if h * max(-low, high) > INT16_MAX:
        return None
    return matching_scale(h * w, h * w * low, h * w * high)


def _sum(graph: TosaGraph, op: Operator, x: str, kernel: tuple[int, int], zp: int, name: str,
         out_shape: tuple, acc: str) -> str:
    """DEPTHWISE_CONV2D of ``x`` with all-ones ``kernel``: exact sums into ``acc``."""
    channels = graph.tensors[x].shape[-1]
    dtype = graph.tensors[x].dtype
    out = graph.add_tensor(name, out_shape, acc)
    inputs = [
        x,
        graph.add_const(f"{name}_weights", np.ones((*kernel, channels, 1), np.int8), "int8"),
        graph.add_const(f"{name}_bias", np.zeros(channels, np.int64), acc),
        graph.add_const(f"{name}_input_zp", [zp], dtype),
        graph.add_const(f"{name}_weight_zp", [0], "int8"),
    ]
    return graph.insert_before(op, "DEPTHWISE_CONV2D", inputs, out, pad=[0, 0, 0, 0],
                               stride=[1, 1], dilation=[1, 1], local_bound=False, acc_type=acc)


def _rescale(graph: TosaGraph, op: Operator, x: str, scale: tuple[int, int], out_zp: int,
             out: str) -> None:
    """RESCALE ``x`` by ``multiplier * 2**-shift`` (16-bit multiplier for int48 input)."""
    src = graph.tensors[x]
    bits = 16 if src.dtype == "int48" else 32
    multiplier, shift = scale
    out_dtype = graph.tensors[out].dtype
    inputs = [
        x,
        graph.add_const(f"{out}_multiplier", [multiplier], f"int{bits}"),
        graph.add_const(f"{out}_shift", [shift], "int8"),
        graph.add_const(f"{out}_input_zp", [0], src.dtype),
        graph.add_const(f"{out}_output_zp", [out_zp], out_dtype),
    ]
    graph.insert_before(op, "RESCALE", inputs, out, scale32=bits == 32,
                        rounding_mode=graph.spec.rounding_mode, per_channel=False,
                        input_unsigned=False, output_unsigned=False)


def _split(graph: TosaGraph, op: Operator) -> bool:
    division = _plan(graph, op)
    if division is None:
        return False
    x, out = op.inputs[0], op.outputs[0]
    n, h, w, c = graph.tensors[x].shape
    columns = _sum(graph, op, x, (h, 1), _zp(graph, op.inputs[1]), f"{out}_column_sums",
                   (n, 1, w, c), "int32")
    narrow = graph.add_tensor(f"{out}_column_sums16", (n, 1, w, c), "int16")
    _rescale(graph, op, columns, encode_scale(1.0), 0, narrow)
    total = _sum(graph, op, narrow, (1, w), 0, f"{out}_sums", (n, 1, 1, c), "int48")
    _rescale(graph, op, total, division, _zp(graph, op.inputs[2]), out)
    graph.operators.remove(op)
    return True


def run(graph: TosaGraph) -> None:
    graph.rewrite("AVG_POOL2D", _split)
