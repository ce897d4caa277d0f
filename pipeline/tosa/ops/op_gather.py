"""aten.gather (``x.gather(dim, index)``: one index per output element) -> GATHER.

TOSA GATHER looks up rows ``values[n, index[n, w], :]``: indices per batch, shared by the
``C`` elements of a row. torch.gather has one index per element, but is mostly written with
an index expanded along the dims after ``dim`` (``x.gather(1, idx[..., None].expand(-1, -1,
d))``: whole tokens) - then it is exactly that row lookup, of the index before the expand
(the expand's TILE is left unread and removed). Otherwise the gathered dim goes last and
every other dim into the batch: ``[N, K, 1]`` values, ``[N, W]`` indices, single elements.
Only the part of ``x`` the index covers is read (torch allows a smaller index in the other
dims): it is SLICEd first.
"""

from __future__ import annotations

import math

from torch import fx

from pipeline.tosa.emit import common as emit, gather, movement
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers


def _covered(ctx: LoweringContext, node: fx.Node, x: fx.Node, sizes) -> str:
    """``x`` cut to ``sizes`` (torch order) where the index is smaller, in x's TOSA order."""
    full, order = torch_shape(x), dim_order(x)
    return emit.crop_trailing(ctx, node, ctx.tensor(x), [full[d] - sizes[d] for d in order])


def _row_index(index: fx.Node, dim: int) -> fx.Node | None:
    """The index before an expand along every dim after ``dim``, if it is one."""
    if str(getattr(index, "target", "")) != "aten.expand.default":
        return None
    base = index.args[0]
    before, after = torch_shape(base), torch_shape(index)
    if len(before) != len(after) or any(before[d] != 1 for d in range(dim + 1, len(after))):
        return None
    return base if before[: dim + 1] == after[: dim + 1] else None


def _rows(ctx: LoweringContext, node: fx.Node, x: fx.Node, dim: int, base: fx.Node) -> None:
    shape, wanted = torch_shape(x), torch_shape(node)
    sizes = [wanted[d] if d < dim else shape[d] for d in range(len(shape))]
    lookup = gather.Lookup(_covered(ctx, node, x, sizes), dim_order(x), tuple(sizes), dim, 1)
    n, k, c = lookup.sizes
    table = emit.relayout(ctx, node, lookup.values, lookup.order, (n, k, c), (0, 1, 2))
    rows = emit.relayout(ctx, node, ctx.tensor(base), dim_order(base), (n, wanted[dim]), (0, 1))
    picked = movement.emit_gather(ctx, node, table, rows)
    emit.relayout(ctx, node, picked, (0, 1, 2), wanted, dim_order(node), define=True)


@lowers("aten.gather.default")
def visit_gather(node: fx.Node, ctx: LoweringContext) -> None:
    x, dim, index = node.args[:3]
    shape, wanted = torch_shape(x), torch_shape(index)
    dim = int(dim) % len(shape)
    base = _row_index(index, dim)
    if base is not None:
        _rows(ctx, node, x, dim, base)
        return
    last = [d for d in range(len(shape)) if d != dim] + [dim]  # the gathered dim last
    sizes = [shape[d] if d == dim else wanted[d] for d in range(len(shape))]
    n = math.prod(wanted) // wanted[dim]
    values = emit.relayout(ctx, node, _covered(ctx, node, x, sizes), dim_order(x), sizes, last)
    table = emit.reshape(ctx, node, values, (n, shape[dim], 1))
    rows = emit.relayout(ctx, node, ctx.tensor(index), dim_order(index), wanted, last)
    picked = movement.emit_gather(ctx, node, table, emit.reshape(ctx, node, rows, (n, wanted[dim])))
    permuted = emit.reshape(ctx, node, picked, [wanted[d] for d in last])
    emit.relayout(ctx, node, permuted, last, wanted, dim_order(node), define=True)


OPERATOR = Operator(
    "gather (one index per output element) -> GATHER",
    quant=SHARED,
)
