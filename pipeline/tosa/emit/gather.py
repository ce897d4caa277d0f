"""Row lookups shared by embedding, index_select, index.Tensor and gather: TOSA GATHER.

GATHER takes ``values [N, K, C]`` and int32 ``indices [N, W]`` and returns ``[N, W, C]``:
row ``indices[n, w]`` of batch ``n``. A lookup of ``count`` adjacent dims of a tensor is that
with ``N`` the dims before (the same indices for each, TILEd), ``K`` the looked-up dims
flattened and ``C`` the dims after. Values are moved, never computed, so a quantized output
keeps the table's quantization exactly. TOSA GATHER has no bool form: bool values are CAST
to int8 and back.

Constant indices (what position ids and HF's mask building leave after normalisation) are
checked and wrapped here; when they are consecutive (``x[:, arange(t)]``) the lookup is a
SLICE, which every Ethos-U runs. Indices computed at run time must be in range: TOSA (and
Ethos-U) do not check them, like torch's embedding on most backends.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from torch import fx

from pipeline.tosa.emit import common as emit, movement
from pipeline.tosa import layout
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape


@dataclass(frozen=True)
class Lookup:
    """``values`` (a TOSA tensor of torch shape ``shape`` in TOSA order ``order``) with dims
    ``first .. first + count - 1`` looked up."""

    values: str
    order: tuple[int, ...]
    shape: tuple[int, ...]
    first: int
    count: int

    @property
    def sizes(self) -> tuple[int, int, int]:
        """(N, K, C) of the GATHER."""
        s, a, b = self.shape, self.first, self.first + self.count
        return math.prod(s[:a]), math.prod(s[a:b]), math.prod(s[b:])


def linear_indices(ctx, node, lookup: Lookup, indices: Sequence[np.ndarray]) -> np.ndarray:
    """Constant per-dim indices (broadcast together, negatives wrapped) as flat row numbers.

    Raises:
        UnsupportedOperatorError: an index outside its dim.
    """
    dims = lookup.shape[lookup.first : lookup.first + lookup.count]
    flat = np.zeros((), dtype=np.int64)
    for index, size in zip(indices, dims):
        index = np.asarray(index, dtype=np.int64)
        if index.size and (index.min() < -size or index.max() >= size):
            got = f"index {int(index.min())}..{int(index.max())}"
            raise ctx.unsupported(node, got, f"indices in [-{size}, {size})")
        flat = flat * size + np.where(index < 0, index + size, index)
    return flat


def runtime_rows(ctx, node, lookup: Lookup, indices: Sequence[fx.Node]) -> tuple[str, tuple]:
    """Index tensors computed at run time (broadcast together, in range, non-negative) as one
    int32 tensor of flat row numbers, ``(i0 * K1 + i1) * K2 + ...`` (int32 MUL and ADD), in
    torch order: ``(tensor, order)`` as ``gather`` takes it."""
    dims = lookup.shape[lookup.first : lookup.first + lookup.count]
    shape = tuple(np.broadcast_shapes(*(torch_shape(i) for i in indices)))
    order = tuple(range(len(shape)))
    flat = None
    for index, size in zip(indices, dims):
        have = (1,) * (len(shape) - len(torch_shape(index))) + torch_shape(index)
        rows = emit.relayout(ctx, node, ctx.tensor(index), dim_order(index), have, order)
        if flat is not None:
            scale = ctx.const(f"{node.name}_row_size", np.full((1,) * len(shape), size), "int32")
            scaled = ctx.temp(node, "rows_scaled", ctx.graph.tensors[flat].shape, "int32")
            shift = ctx.graph.add_const(f"{node.name}_shift", np.array([0]), "int8",
                                        any_profile=True)  # fmt: skip
            ctx.emit("MUL", [flat, scale, shift], [scaled], node)
            wide = np.broadcast_shapes(ctx.graph.tensors[flat].shape, have)
            summed = ctx.temp(node, "rows", wide, "int32")
            ctx.emit("ADD", [scaled, rows], [summed], node)
            rows = summed
        flat = rows
    return movement.tile(ctx, node, flat, shape), order


def gather(ctx: LoweringContext, node: fx.Node, lookup: Lookup, rows) -> None:
    """``node``'s output: ``lookup`` at ``rows`` - a constant array of flat row numbers, or a
    TOSA int32 tensor of torch shape ``torch_shape(rows_node)`` given as (tensor, order)."""
    table = _table(ctx, node, lookup)
    if isinstance(rows, np.ndarray):
        picked = _constant_rows(ctx, node, table, rows)
    else:
        picked = _dynamic_rows(ctx, node, table, *rows)
    emit.relayout(ctx, node, picked, (0, 1, 2), torch_shape(node), dim_order(node), define=True)


def _table(ctx, node, lookup: Lookup) -> str:
    """The looked-up tensor as ``[N, K, C]``; a constant (an embedding table) is stored so."""
    source = ctx.graph.tensors[lookup.values]
    if not source.is_const:
        return emit.relayout(ctx, node, lookup.values, lookup.order, lookup.sizes, (0, 1, 2))
    data = np.transpose(source.data, layout.inverse(lookup.order)).reshape(lookup.sizes)
    return ctx.const(f"{node.name}_table", data, source.dtype)


def _constant_rows(ctx, node, table: str, rows: np.ndarray) -> str:
    return movement.take(ctx, node, table, 1, rows.reshape(-1))


def _dynamic_rows(ctx, node, table: str, rows: str, order: Sequence[int]) -> str:
    n = ctx.graph.tensors[table].shape[0]
    count = math.prod(ctx.graph.tensors[rows].shape)
    indices = emit.relayout(ctx, node, rows, order, (1, count), (0, 1))
    if n > 1:
        tiled = ctx.temp(node, "indices", (n, count), "int32")
        multiples = ctx.const(f"{node.name}_multiples", [n, 1], "shape")
        ctx.emit("TILE", [indices, multiples], [tiled], node)
        indices = tiled
    return movement.emit_gather(ctx, node, table, indices)
