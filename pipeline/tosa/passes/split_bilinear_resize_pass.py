"""Ethos-U55/U65: an integer RESIZE BILINEAR by 2, 4 or 8 becomes replicated edges, NEAREST
RESIZE and a depthwise filter, with the same integer output.

Vela 5.2 runs no TOSA form of BILINEAR RESIZE on Ethos-U55/U65 but does run NEAREST by 2, 4
and 8. Half-pixel bilinear upsampling by an even factor k (what ``op_upsample_bilinear``
lowers) is a nearest upsample by k followed by the filter ``[1, 2, ..., 2, 1]`` (k + 1 taps,
sum 2k; ``axis_filter``) along each axis: output row ``k*i + r`` then weights rows ``i - 1,
i, i + 1`` exactly as the bilinear tent does. The RESIZE clamps its source rows to the image
(torch too); for the filter that is the image padded by replicated edge rows, so the input
gets one replicated row and column each side first (SLICE + CONCAT: TOSA PAD only pads
constants), is upsampled, and cropped to the ``k / 2`` rows each side the filter reaches
(Vela folds that SLICE into the convolution's read).

Exactness: RESIZE BILINEAR's int32/int48 output is ``sum(weights * x)`` with weights summing
to ``2ky * 2kx``; the DEPTHWISE_CONV2D (input zero point 0, like the RESIZE) accumulates the
same sum with the outer product of the two filters, so it writes the identical integers into
the same tensor and the RESCALE after it is untouched. Measured with Vela 5.2
(``benchmarks/bench_upsample.py``): on Ethos-U85 this form costs 1.4-6.7x the cycles of the
RESIZE (one NPU operation there), so the rewrite runs in the U55/U65 variant only.
"""

from __future__ import annotations

import numpy as np

from pipeline.tosa.graph import Operator, TosaGraph
from pipeline.tosa.ops.op_upsample import resize_parameters

FACTORS = (2, 4, 8)  # the NEAREST factors Vela runs on Ethos-U55/U65
_ACCUMULATORS = {"int8": "int32", "int16": "int48"}


def axis_filter(factor: int) -> list[int]:
    """Taps (sum ``2 * factor``) that turn a nearest upsample by an even ``factor`` into the
    half-pixel bilinear one along an axis."""
    return [1] + [2] * (factor - 1) + [1]


def _factors(graph: TosaGraph, op: Operator) -> tuple[int, int] | None:
    """(ky, kx) of a RESIZE in the lowering's integer-factor bilinear form, else None."""
    x, out = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if op.attrs.get("mode") != "BILINEAR" or _ACCUMULATORS.get(x.dtype) != out.dtype:
        return None
    if len(x.shape) != 4 or any(o % i for i, o in zip(x.shape[1:3], out.shape[1:3])):
        return None
    factors = tuple(o // i for i, o in zip(x.shape[1:3], out.shape[1:3]))
    scale, offset, border = (graph.tensors[n].data.reshape(-1).tolist() for n in op.inputs[1:4])
    axes = [resize_parameters(i, o) for i, o in zip(x.shape[1:3], out.shape[1:3])]
    lowered = ([p for a in axes for p in a[:2]], [a[2] for a in axes], [a[3] for a in axes])
    if (scale, offset, border) != lowered or any(f not in FACTORS for f in factors):
        return None
    return factors


def _slice(graph: TosaGraph, before: Operator, x: str, start: list, size: list) -> str:
    hint = before.outputs[0]
    out = graph.add_tensor(f"{hint}_window", size, graph.tensors[x].dtype)
    inputs = [x, graph.add_const(f"{hint}_start", np.asarray(start), "shape"),
              graph.add_const(f"{hint}_size", np.asarray(size), "shape")]  # fmt: skip
    return graph.insert_before(before, "SLICE", inputs, out)


def _replicate_edges(graph: TosaGraph, before: Operator, x: str) -> str:
    """``x`` (NHWC) with its first and last row, then column, repeated once outside."""
    for axis in (1, 2):
        shape = list(graph.tensors[x].shape)
        size = [1 if i == axis else d for i, d in enumerate(shape)]
        last = [shape[axis] - 1 if i == axis else 0 for i in range(4)]
        edges = [_slice(graph, before, x, start, size) for start in ([0] * 4, last)]
        shape[axis] += 2
        out = graph.add_tensor(f"{before.outputs[0]}_replicated", shape, graph.tensors[x].dtype)
        x = graph.insert_before(before, "CONCAT", [edges[0], x, edges[1]], out, axis=axis)
    return x


def _split(graph: TosaGraph, op: Operator) -> bool:
    factors = _factors(graph, op)
    if factors is None:
        return False
    (ky, kx), hint, acc = factors, op.outputs[0], graph.tensors[op.outputs[0]].dtype
    padded = _replicate_edges(graph, op, op.inputs[0])
    n, h, w, c = graph.tensors[padded].shape
    (sy, dy, oy, by), (sx, dx, ox, bx) = resize_parameters(h, h * ky), resize_parameters(w, w * kx)
    dtype = graph.tensors[padded].dtype
    nearest = graph.add_tensor(f"{hint}_nearest", (n, h * ky, w * kx, c), dtype)
    params = ([sy, dy, sx, dx], [oy, ox], [by, bx])
    inputs = [padded, *(graph.add_const(f"{hint}_{name}", np.asarray(v), "shape")
                        for name, v in zip(("scale", "offset", "border"), params))]  # fmt: skip
    graph.insert_before(op, "RESIZE", inputs, nearest, mode="NEAREST")
    # the k + 1 taps reach k / 2 rows (columns) beyond the image: keep that many replicated
    window = _slice(
        graph, op, nearest, [0, ky // 2, kx // 2, 0], [n, (h - 1) * ky, (w - 1) * kx, c]
    )
    taps = np.outer(axis_filter(ky), axis_filter(kx)).astype(np.int8)
    inputs = [
        window,
        graph.add_const(f"{hint}_weights", np.repeat(taps[:, :, None, None], c, axis=2), "int8"),
        graph.add_const(f"{hint}_bias", np.zeros(c, np.int64), acc),
        graph.add_const(f"{hint}_input_zp", np.asarray([0]), dtype),
        graph.add_const(f"{hint}_weight_zp", np.asarray([0]), "int8"),
    ]
    graph.insert_before(op, "DEPTHWISE_CONV2D", inputs, op.outputs[0], pad=[0, 0, 0, 0], stride=[1, 1],
         dilation=[1, 1], local_bound=False, acc_type=acc)  # fmt: skip
    graph.operators.remove(op)
    return True


def run(graph: TosaGraph) -> None:
    graph.rewrite("RESIZE", _split)
