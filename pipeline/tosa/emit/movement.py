"""Data movement along one axis of a TOSA tensor, the pieces of the indexing operators: strided
slices, constant-index takes, reversal and interleaving, each built from SLICE, CONCAT,
RESHAPE, REVERSE (and GATHER when nothing cheaper does), which every Ethos-U runs.

A tensor is seen along an axis as ``[outer, size, inner]``: the RESHAPE to that view moves no
data. A strided slice (``x[:, 1::2]``) is then one SLICE of a ``[outer, count, step, inner]``
view; REVERSE of the view's middle axis (the W axis of a rank-3 tensor, which Ethos-U55 too
reverses) flips any axis. Every helper only moves values, so an integer tensor keeps its
quantization exactly; each returns the name of the tensor it made.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order

MAX_RUNS = 64  # constant indices in at most this many consecutive runs may be SLICEs + CONCAT
MAX_POOL_STRIDE = 3  # Ethos-U pools with strides 1..3; Vela splits larger ones (slower)
POOL_TYPES = ("int8", "int16", "fp16", "bf16", "fp32")  # what TOSA's MAX_POOL2D takes
MAX_ONE_HOT = 1 << 18  # weights of a channel-picking CONV2D (bytes)
ACC_TYPES = {"int8": "int32", "int16": "int48", "fp32": "fp32"}
ITEMSIZE = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "fp32": 4, "fp16": 2, "bf16": 2}


def shared_values(ctx: LoweringContext, node: fx.Node, values: fx.Node, shape, order) -> str:
    """``values`` as a TOSA tensor of torch shape ``shape`` (a reshape of its own) in
    ``order``, in ``node``'s quantization: what a write into ``x`` (``x[idx] = values``)
    places, RESCALEd only if the quantizer could not share x's qparams with it."""
    source = emit.relayout(ctx, node, ctx.tensor(values), dim_order(values), shape, order)
    q, out_q = ctx.qparams(values), ctx.qparams(node)
    if emit.same_quantization(q, out_q):
        return source
    if q is None or out_q is None:
        raise ctx.unsupported(node, "a float value in a quantized graph", "quantized values")
    return emit.requantize(ctx, node, source, q, out_q)


def shape_of(ctx: LoweringContext, src: str) -> tuple[int, ...]:
    return ctx.graph.tensors[src].shape


def view3(ctx: LoweringContext, src: str, axis: int) -> tuple[int, int, int]:
    """``(outer, size, inner)`` of ``src`` seen along ``axis``."""
    shape = shape_of(ctx, src)
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])


def resized(shape: Sequence[int], axis: int, size: int) -> tuple[int, ...]:
    return tuple(size if i == axis else s for i, s in enumerate(shape))


def reshape(ctx: LoweringContext, node: fx.Node, src: str, shape: Sequence[int]) -> str:
    """RESHAPE, or ``src`` itself when it has that shape already."""
    if tuple(shape) == shape_of(ctx, src):
        return src
    return emit.reshape(ctx, node, src, tuple(shape))


def cut(ctx: LoweringContext, node: fx.Node, src: str, axis: int, start: int, size: int):
    """SLICE ``size`` elements from ``start`` along ``axis`` (``src`` itself if that is all,
    None if nothing)."""
    shape = shape_of(ctx, src)
    if start == 0 and size == shape[axis]:
        return src
    if size == 0:
        return None
    out_shape = resized(shape, axis, size)
    out = ctx.temp(node, "slice", out_shape, ctx.graph.tensors[src].dtype)
    inputs = [
        src,
        ctx.const(f"{node.name}_start", [start if i == axis else 0 for i in range(len(shape))],
                  "shape"),
        ctx.const(f"{node.name}_size", list(out_shape), "shape"),
    ]  # fmt: skip
    ctx.emit("SLICE", inputs, [out], node)
    return out


def join(ctx: LoweringContext, node: fx.Node, pieces: Sequence[str | None], axis: int) -> str:
    """CONCAT along ``axis`` of the pieces that are not None (the piece itself if one)."""
    pieces = [p for p in pieces if p is not None]
    if len(pieces) == 1:
        return pieces[0]
    shape = resized(shape_of(ctx, pieces[0]), axis, sum(shape_of(ctx, p)[axis] for p in pieces))
    out = ctx.temp(node, "joined", shape, ctx.graph.tensors[pieces[0]].dtype)
    ctx.emit("CONCAT", list(pieces), [out], node, axis=axis)
    return out


def tile(ctx: LoweringContext, node: fx.Node, src: str, shape: Sequence[int]) -> str:
    """TILE ``src`` (its size-1 axes) up to ``shape``; ``src`` itself if it has it."""
    have = shape_of(ctx, src)
    if tuple(have) == tuple(shape):
        return src
    data = ctx.graph.tensors[src].data
    if data is not None:  # a fill (x[idx] = 0): stored at full size, no TILE
        return ctx.const(f"{node.name}_spread", np.broadcast_to(data, shape).copy(),
                         ctx.graph.tensors[src].dtype)  # fmt: skip
    out = ctx.temp(node, "tiled", tuple(shape), ctx.graph.tensors[src].dtype)
    multiples = ctx.const(f"{node.name}_multiples", [w // h for h, w in zip(have, shape)], "shape")
    ctx.emit("TILE", [src, multiples], [out], node)
    return out


def reverse(ctx: LoweringContext, node: fx.Node, src: str, axis: int) -> str:
    """REVERSE along ``axis``, as the middle axis of ``[outer, size, inner]``: Vela reverses
    only the H and W axes on Ethos-U55/U65, and that is W."""
    shape = shape_of(ctx, src)
    if shape[axis] == 1:
        return src
    flat = reshape(ctx, node, src, view3(ctx, src, axis))
    out = ctx.temp(node, "reversed", shape_of(ctx, flat), ctx.graph.tensors[src].dtype)
    ctx.emit("REVERSE", [flat], [out], node, axis=1)
    return reshape(ctx, node, out, shape)


def _blocks(ctx, node, src: str, axis: int, start: int, step: int, count: int):
    """``src`` along ``axis`` as ``[outer, count, step, inner]`` blocks whose column ``r``
    holds elements ``start + i * step``; returns ``(blocks, r)``. None when ``count * step``
    elements from a multiple of ``step`` at or before ``start`` do not fit the axis."""
    outer, size, inner = view3(ctx, src, axis)
    r = start % step
    if start - r + count * step > size:
        r = start + count * step - size
        if r > start:
            return None
    begin = start - r
    flat = reshape(ctx, node, src, (outer, size, inner))
    if size % step == 0 and begin % step == 0:
        # The whole axis is blocks already: one SLICE later picks rows and column at once.
        grid = reshape(ctx, node, flat, (outer, size // step, step, inner))
        return cut(ctx, node, grid, 1, begin // step, count), r
    span = cut(ctx, node, flat, 1, begin, count * step)
    return reshape(ctx, node, span, (outer, count, step, inner)), r


def _pooled(ctx, node, src: str, axis: int, start: int, step: int, count: int) -> str:
    """``x[..., start::step]`` along a non-innermost axis: a 1x1 MAX_POOL2D with that stride
    over ``[1, outer, span, inner]`` (the span cropped to end on the last element picked)."""
    outer, size, inner = view3(ctx, src, axis)
    span = (count - 1) * step + 1
    part = cut(ctx, node, reshape(ctx, node, src, (outer, size, inner)), 1, start, span)
    image = reshape(ctx, node, part, (1, outer, span, inner))
    out = ctx.temp(node, "strided", (1, outer, count, inner), ctx.graph.tensors[src].dtype)
    ctx.emit("MAX_POOL2D", [image], [out], node, kernel=[1, 1], stride=[1, step],
             pad=[0, 0, 0, 0], nan_mode="PROPAGATE")  # fmt: skip
    return reshape(ctx, node, out, resized(shape_of(ctx, src), axis, count))


def channels(ctx, node, src: str, indices: np.ndarray) -> str:
    """Constant ``indices`` of the innermost axis: a 1x1 CONV2D whose one-hot weights pick one
    input channel per output channel (exact: one term per sum, RESCALEd by 1). Ethos-U moves
    a size-1 innermost axis an element at a time; this keeps the values as channels."""
    shape, dtype = shape_of(ctx, src), ctx.graph.tensors[src].dtype
    size, count, outer = shape[-1], len(indices), math.prod(shape[:-1])
    acc = ACC_TYPES[dtype]
    weight_type = "fp32" if dtype == "fp32" else "int8"
    one_hot = (np.asarray(indices)[:, None] == np.arange(size)).reshape(count, 1, 1, size)
    image = reshape(ctx, node, src, (1, 1, outer, size))
    inputs = [
        image,
        ctx.const(f"{node.name}_one_hot", one_hot.astype(np.float32 if acc == "fp32" else np.int8),
                  weight_type),
        ctx.const(f"{node.name}_bias", np.zeros(count, np.float32 if acc == "fp32" else np.int64),
                  acc),
        ctx.zero_point(f"{node.name}_input_zp", 0, dtype),
        ctx.zero_point(f"{node.name}_weight_zp", 0, weight_type),
    ]  # fmt: skip
    summed = ctx.temp(node, "picked", (1, 1, outer, count), acc)
    ctx.emit("CONV2D", inputs, [summed], node, pad=[0, 0, 0, 0], stride=[1, 1], dilation=[1, 1],
             local_bound=False, acc_type=acc)  # fmt: skip
    if acc != "fp32":
        summed = emit.rescale(ctx, node, summed, [1.0], in_zp=0, out_zp=0, out_dtype=dtype)
    return reshape(ctx, node, summed, (*shape[:-1], count))


def strided(ctx, node, src: str, axis: int, start: int, step: int, count: int) -> str:
    """Elements ``start + i * step`` (``i < count``) along ``axis``: ``x[..., start::step]``.

    Vela 5.2 (cycles, ethos-u55-128 / -u85-256): a stride of 2 or 3 is a MAX_POOL2D (``x[:,
    ::2]`` of 1x64x96 tokens: 3,448 / 2,941, against 7,033 / 3,548 as a SLICE of blocks;
    W of 1x16x8x257: 16,888 / 9,352 against 117,048 / 60,540), a larger one a SLICE of
    blocks (Vela splits pooling strides above 3: ``::4`` of H, 4,737 against 13,792), the
    innermost axis a one-hot CONV2D (channels of 1x64x16x16: 152,576 as a SLICE of blocks).
    """
    if step == 1 or count == 1:
        return cut(ctx, node, src, axis, start, count)
    shape, dtype = shape_of(ctx, src), ctx.graph.tensors[src].dtype
    innermost = math.prod(shape[axis + 1 :]) == 1
    if innermost and shape[axis] * count <= MAX_ONE_HOT and dtype in ACC_TYPES:
        picked = channels(ctx, node, reshape(ctx, node, src, shape[: axis + 1]),
                          start + step * np.arange(count))  # fmt: skip
        return reshape(ctx, node, picked, resized(shape, axis, count))
    if step <= MAX_POOL_STRIDE and dtype in POOL_TYPES:
        return _pooled(ctx, node, src, axis, start, step, count)
    found = _blocks(ctx, node, src, axis, start, step, count)
    if found is None:  # the last block runs past the end: it is taken on its own
        head = strided(ctx, node, src, axis, start, step, count - 1)
        last = cut(ctx, node, src, axis, start + (count - 1) * step, 1)
        return join(ctx, node, [head, last], axis)
    blocks, r = found
    column = cut(ctx, node, blocks, 2, r, 1)
    return reshape(ctx, node, column, resized(shape, axis, count))


def interleave(ctx, node, src: str, values: str, axis: int, start: int, step: int) -> str:
    """``src`` with elements ``start + i * step`` along ``axis`` replaced by ``values``
    (``torch.slice_scatter``), as CONCATs of its pieces and the values."""
    size, count = shape_of(ctx, src)[axis], shape_of(ctx, values)[axis]
    if step == 1 or count == 1:
        pieces = [cut(ctx, node, src, axis, 0, start), values]
        end = start + (count - 1) * step + 1
        return join(ctx, node, [*pieces, cut(ctx, node, src, axis, end, size - end)], axis)
    found = _blocks(ctx, node, src, axis, start, step, count)
    if found is None:
        last = cut(ctx, node, values, axis, count - 1, 1)
        head = interleave(ctx, node, src, cut(ctx, node, values, axis, 0, count - 1), axis,
                          start, step)  # fmt: skip
        return interleave(ctx, node, head, last, axis, start + (count - 1) * step, 1)
    blocks, r = found
    outer, _, inner = view3(ctx, src, axis)
    column = reshape(ctx, node, values, (outer, count, 1, inner))
    left, right = cut(ctx, node, blocks, 2, 0, r), cut(ctx, node, blocks, 2, r + 1, step - r - 1)
    merged = join(ctx, node, [left, column, right], 2)
    begin = start - r
    middle = reshape(ctx, node, merged, (outer, count * step, inner))
    flat = reshape(ctx, node, src, (outer, size, inner))
    end = begin + count * step
    pieces = [cut(ctx, node, flat, 1, 0, begin), middle, cut(ctx, node, flat, 1, end, size - end)]
    return reshape(ctx, node, join(ctx, node, pieces, 1), shape_of(ctx, src))


def runs(indices: Sequence[int]) -> list[tuple[int, int]]:
    """``(start, length)`` of each stretch of consecutive values: [3, 4, 0, 1] -> (3, 2), (0, 2)."""
    found: list[tuple[int, int]] = []
    for index in indices:
        if found and found[-1][0] + found[-1][1] == index:
            found[-1] = (found[-1][0], found[-1][1] + 1)
        else:
            found.append((int(index), 1))
    return found


def pieces_cheaper(moved: int, picked: int, row_bytes: int, pieces: int) -> bool:
    """Whether ``pieces`` SLICEs and a CONCAT moving ``moved`` rows of ``row_bytes`` cost fewer
    Ethos-U85 cycles than one GATHER (or SCATTER) of ``picked`` rows. Vela 5.2's estimates on
    ethos-u85-256 (cycles_total; rolls, row picks and writes of 3..800 rows of 1..64 bytes)
    fit a GATHER as ``6 + 3 * bytes`` per row, a SLICE or CONCAT as 80 plus a quarter cycle
    per byte: a 100-row roll of 1x257x64 is 8,592 cycles as two SLICEs and a CONCAT, 51,400
    as a GATHER; three single rows of it 474 against 600, three of 2x8x5 318 against 93."""
    if pieces <= 1:
        return True
    slices = 80 * (pieces + 1) + moved * row_bytes / 4
    return pieces <= MAX_RUNS and slices < picked * (6 + 3 * row_bytes)


def take(ctx, node, src: str, axis: int, indices: np.ndarray) -> str:
    """Elements at constant ``indices`` (in range, non-negative) along ``axis``: SLICEs and a
    CONCAT of their consecutive runs (``roll``: two) when that is cheaper, else a one-hot
    CONV2D for the innermost axis (``channels``) or one GATHER of rows."""
    indices = np.asarray(indices).reshape(-1)
    shape, dtype = shape_of(ctx, src), ctx.graph.tensors[src].dtype
    outer, size, inner = view3(ctx, src, axis)
    found = runs(indices.tolist())
    if inner == 1 and axis < len(shape) - 1:
        # Ethos-U moves a size-1 innermost axis an element at a time: the axis becomes C.
        flat = reshape(ctx, node, src, shape[: axis + 1])
        return reshape(ctx, node, take(ctx, node, flat, axis, indices),
                       resized(shape, axis, indices.size))  # fmt: skip
    picked = outer * indices.size
    if pieces_cheaper(picked, picked, inner * ITEMSIZE[dtype], len(found)):
        return join(ctx, node, [cut(ctx, node, src, axis, s, n) for s, n in found], axis)
    if inner == 1 and size * indices.size <= MAX_ONE_HOT and dtype in ACC_TYPES:
        return channels(ctx, node, src, indices)
    table = reshape(ctx, node, src, (outer, size, inner))
    rows = np.tile(indices.reshape(1, -1), (outer, 1))
    picked = emit_gather(ctx, node, table, ctx.const(f"{node.name}_rows", rows, "int32"))
    return reshape(ctx, node, picked, resized(shape, axis, indices.size))


def emit_gather(ctx, node, table: str, indices: str) -> str:
    """GATHER of ``table [N, K, C]`` at int32 ``indices [N, W]``: a new ``[N, W, C]`` tensor."""
    n, _, c = ctx.graph.tensors[table].shape
    w = ctx.graph.tensors[indices].shape[1]
    dtype = ctx.graph.tensors[table].dtype
    if dtype == "bool":
        table = emit.cast(ctx, node, table, "int8")
    out = ctx.temp(node, "gathered", (n, w, c), ctx.graph.tensors[table].dtype)
    ctx.emit("GATHER", [table, indices], [out], node)
    return emit.cast(ctx, node, out, "bool") if dtype == "bool" else out
