"""aten.index_put (``x[idx] = v``, ``x[:, idx] = v``, ``x.index_copy(1, idx, v)``) -> SCATTER,
or SLICEs and a CONCAT when constant indices fall in few runs.

The indexed dims (adjacent, as in ``gather.py``) are flattened to ``K`` rows of ``x`` seen as
``[N, K, C]``; the values, broadcast to ``[N, W, C]``, replace rows ``idx``. Constant indices
are wrapped and de-duplicated (the last write wins, as torch does on the CPU): the output is
then runs of ``x``'s rows and of the values' rows, CONCATenated when there are few (every
Ethos-U runs that), else one SCATTER that the Ethos-U55/U65 variant makes a one-hot product
(``replace_scatter_pass``). Indices computed at run time are a SCATTER (Ethos-U85 only); TOSA
requires them in range and distinct, so a write that a later one repeats goes to a spare row
past ``x``'s own, one per write, which is cut off after (EQUAL of every pair, REDUCE_ANY,
SELECT): the last write wins, as on torch's CPU, whatever the indices. Values are moved only:
``x``, the values and the output share one quantization. A bool mask index (``x[mask] = 0``) is
a ``where`` by then (``pipeline/normalise``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import fx

from pipeline.tosa.emit import common as emit, gather, movement
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import shared_inputs
from pipeline.tosa.registry import Operator, lowers


def _indexed(ctx: LoweringContext, node: fx.Node, indices) -> tuple[int, list[fx.Node]]:
    positions = [i for i, index in enumerate(indices) if index is not None]
    if positions != list(range(positions[0], positions[-1] + 1)):
        raise ctx.unsupported(node, "index tensors apart from each other", "adjacent ones")
    chosen = [indices[i] for i in positions]
    if any(i.meta["val"].dtype == torch.bool for i in chosen) and len(chosen) > 1:
        raise ctx.unsupported(
            node, "a bool mask computed at run time beside other index tensors (torch pairs "
            "its True positions with them: how many there are is data-dependent)",
            "one run-time mask with values that broadcast over it, or constant masks",
        )  # fmt: skip
    if any(i.meta["val"].dtype == torch.bool for i in chosen):
        raise ctx.unsupported(
            node, "a bool mask computed at run time and values per masked element (which "
            "value goes where depends on how many elements are True: data-dependent)",
            "values that broadcast over the masked elements (a number, a row), or a constant "
            "mask (a buffer, a literal)",
        )  # fmt: skip
    return positions[0], chosen


def _views(ctx, node, x: fx.Node, values: fx.Node, first: int, chosen, index_shape):
    """``x`` as ``[N, K, C]`` rows, the values broadcast to ``[N, W, C]`` in x's quantization,
    and ``x``'s (TOSA shape, order) to go back to. One 1-D index reads ``x`` along its own
    TOSA axis (no TRANSPOSE of an NHWC tensor); several are flattened in torch's order."""
    shape = torch_shape(x)
    full = (*shape[:first], *index_shape, *shape[first + len(chosen) :])
    direct = len(chosen) == 1 and len(index_shape) == 1
    order = dim_order(x) if direct else tuple(range(len(full)))
    have = torch_shape(values)
    padded = (1,) * (len(full) - len(have)) + tuple(have)
    placed = movement.shared_values(ctx, node, values, padded, order)
    placed = movement.tile(ctx, node, placed, [full[d] for d in order])
    if direct:
        table = ctx.tensor(x)
        return table, placed, list(order).index(first), (ctx.graph.tensors[table].shape, order)
    lookup = gather.Lookup(ctx.tensor(x), dim_order(x), shape, first, len(chosen))
    n, k, c = lookup.sizes
    table = emit.relayout(ctx, node, lookup.values, lookup.order, (n, k, c), (0, 1, 2))
    w = math.prod(index_shape)
    return table, movement.reshape(ctx, node, placed, (n, w, c)), 1, ((n, k, c), (0, 1, 2))


def _runs_of_rows(k: int, rows: np.ndarray) -> list[tuple[str, int, int]]:
    """Output rows as runs ``(source, start, length)`` of x's rows (``x``) and the values'
    rows (``v``); a repeated index takes its last value."""
    sources = [("x", r) for r in range(k)]
    for j, row in enumerate(rows):
        sources[int(row)] = ("v", j)
    found: list[list] = []
    for source, index in sources:
        if found and found[-1][0] == source and found[-1][1] + found[-1][2] == index:
            found[-1][2] += 1
        else:
            found.append([source, index, 1])
    return [tuple(run) for run in found]


def _last_writes(ctx, node, rows: str, k: int, w: int) -> str:
    """Int32 ``[W]`` run-time rows with every write a later one repeats moved to its own
    spare row ``K + j``: distinct rows whose real ones hold the last writes."""
    column = movement.reshape(ctx, node, rows, (w, 1))
    line = movement.reshape(ctx, node, rows, (1, w))
    same = ctx.temp(node, "same_row", (w, w), "bool")
    ctx.emit("EQUAL", [column, line], [same], node)
    later = ctx.const(f"{node.name}_later", np.triu(np.ones((w, w), dtype=bool), 1), "bool")
    repeated = ctx.temp(node, "repeated_later", (w, w), "bool")
    ctx.emit("LOGICAL_AND", [same, later], [repeated], node)
    overwritten = ctx.temp(node, "overwritten", (w, 1), "bool")
    ctx.emit("REDUCE_ANY", [repeated], [overwritten], node, axis=1)
    spare = ctx.const(f"{node.name}_spare_rows", np.arange(k, k + w).reshape(w, 1), "int32")
    moved = ctx.temp(node, "distinct_rows", (w, 1), "int32")
    ctx.emit("SELECT", [overwritten, spare, column], [moved], node)
    return movement.reshape(ctx, node, moved, (w,))


def _scatter(ctx, node, table: str, axis: int, rows, values: str) -> str:
    """SCATTER of ``values`` into rows ``rows`` (int32 ``[W]`` tensor or constant) of ``table``
    along ``axis``, both seen as ``[N, K, C]``."""
    shape = movement.shape_of(ctx, table)
    table3 = movement.reshape(ctx, node, table, movement.view3(ctx, table, axis))
    values3 = movement.reshape(ctx, node, values, movement.view3(ctx, values, axis))
    (n, k, c), w = movement.shape_of(ctx, table3), movement.shape_of(ctx, values3)[1]
    dtype = ctx.graph.tensors[table].dtype
    spares = 0
    if isinstance(rows, np.ndarray):
        indices = ctx.const(f"{node.name}_rows", np.tile(rows.reshape(1, w), (n, 1)), "int32")
    else:
        if w > 1:  # run-time rows may repeat
            rows, spares = _last_writes(ctx, node, rows, k, w), w
            blank = ctx.const(f"{node.name}_spare", np.zeros((n, w, c)), dtype)
            table3 = movement.join(ctx, node, [table3, blank], 1)
        indices = movement.tile(ctx, node, movement.reshape(ctx, node, rows, (1, w)), (n, w))
    out = ctx.temp(node, "scattered", (n, k + spares, c), dtype)
    ctx.emit("SCATTER", [table3, indices, values3], [out], node)
    if spares:
        out = movement.cut(ctx, node, out, 1, 0, k)
    return movement.reshape(ctx, node, out, shape)


def _constant(ctx, node, table: str, axis: int, values: str, rows: np.ndarray) -> str:
    outer, k, inner = movement.view3(ctx, table, axis)
    found = _runs_of_rows(k, rows)
    row_bytes = inner * movement.ITEMSIZE[ctx.graph.tensors[table].dtype]
    if movement.pieces_cheaper(outer * k, outer * rows.size, row_bytes, len(found)):
        sources = {"x": table, "v": values}
        pieces = [movement.cut(ctx, node, sources[s], axis, a, size) for s, a, size in found]
        return movement.join(ctx, node, pieces, axis)
    last = {int(row): j for j, row in enumerate(rows)}  # the last write of each row
    kept = np.array(sorted(last.values()))
    if kept.size < rows.size:
        values = movement.take(ctx, node, values, axis, kept)
    return _scatter(ctx, node, table, axis, rows[kept], values)


@lowers("aten.index_put.default")
def visit_index_put(node: fx.Node, ctx: LoweringContext) -> None:
    x, indices, values = node.args[:3]
    accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
    if accumulate:
        raise ctx.unsupported(node, "accumulate=True", "accumulate=False (x[idx] = v)")
    if not emit.same_quantization(ctx.qparams(x), ctx.qparams(node)):
        raise ctx.unsupported(node, "input and output quantized differently", "shared qparams")
    first, chosen = _indexed(ctx, node, indices)
    index_shape = tuple(torch.broadcast_shapes(*(torch_shape(i) for i in chosen)))
    table, placed, axis, (shape, order) = _views(ctx, node, x, values, first, chosen, index_shape)
    constants = [ctx.const_value(i) for i in chosen]
    if all(v is not None for v in constants):
        lookup = gather.Lookup(table, order, torch_shape(x), first, len(chosen))
        flat = gather.linear_indices(ctx, node, lookup, [v.numpy() for v in constants])
        rows = np.broadcast_to(flat, index_shape).reshape(-1)
        result = _constant(ctx, node, table, axis, placed, rows)
    else:
        lookup = gather.Lookup(table, order, torch_shape(x), first, len(chosen))
        flat, flat_order = gather.runtime_rows(ctx, node, lookup, chosen)
        w = movement.shape_of(ctx, placed)[axis]
        ids = emit.relayout(ctx, node, flat, flat_order, (w,), (0,))
        result = _scatter(ctx, node, table, axis, ids, placed)
    result = movement.reshape(ctx, node, result, shape)
    emit.relayout(ctx, node, result, order, torch_shape(node), dim_order(node), True)


OPERATOR = Operator(
    "index_put (x[idx] = v) -> SCATTER, or SLICEs and a CONCAT at constant indices",
    quant=shared_inputs(0, 2),
)
