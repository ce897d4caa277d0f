"""aten.embedding / index_select / index.Tensor (``table[ids]``, ``x[:, idx]``) -> GATHER of
rows, or SLICE when constant indices are consecutive (``pipeline/tosa/emit/gather.py``).

``nn.Embedding``'s ``padding_idx`` only changes training, so the lookup ignores it. In an
int8 graph the table is one int8 tensor with per-tensor qparams that the output shares (the
quantizer's rule): the looked-up rows are the table's own integers. Several index tensors
(``mask[batch, positions]``, as HF's mask building leaves it) must be adjacent: they are
folded into one flat row number per element (at run time by int32 MUL/ADD when any is not
constant).
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import gather
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers


def _lookup(ctx: LoweringContext, x: fx.Node, first: int, count: int) -> gather.Lookup:
    return gather.Lookup(ctx.tensor(x), dim_order(x), torch_shape(x), first, count)


def _rows(ctx: LoweringContext, node: fx.Node, lookup: gather.Lookup, indices: list[fx.Node]):
    """The rows to gather: flat constant row numbers, or one run-time index tensor."""
    constants = [ctx.const_value(i) for i in indices]
    if all(c is not None for c in constants):
        return gather.linear_indices(ctx, node, lookup, [c.numpy() for c in constants])
    if len(indices) > 1:
        return gather.runtime_rows(ctx, node, lookup, indices)
    return ctx.tensor(indices[0]), dim_order(indices[0])


@lowers("aten.embedding.default")
def visit_embedding(node: fx.Node, ctx: LoweringContext) -> None:
    weight, ids = node.args[:2]
    lookup = _lookup(ctx, weight, 0, 1)
    gather.gather(ctx, node, lookup, _rows(ctx, node, lookup, [ids]))


@lowers("aten.index_select.default")
def visit_index_select(node: fx.Node, ctx: LoweringContext) -> None:
    x, dim, index = node.args[:3]
    lookup = _lookup(ctx, x, int(dim) % len(torch_shape(x)), 1)
    gather.gather(ctx, node, lookup, _rows(ctx, node, lookup, [index]))


@lowers("aten.index.Tensor")
def visit_index(node: fx.Node, ctx: LoweringContext) -> None:
    x, indices = node.args[:2]
    positions = [i for i, index in enumerate(indices) if index is not None]
    if positions != list(range(positions[0], positions[-1] + 1)):
        raise ctx.unsupported(node, "index tensors apart from each other", "adjacent ones")
    lookup = _lookup(ctx, x, positions[0], len(positions))
    gather.gather(ctx, node, lookup, _rows(ctx, node, lookup, [indices[i] for i in positions]))


OPERATOR = Operator(
    "embedding / index_select / index -> GATHER of rows (constant ones: SLICEs or one-hot CONV2D)",
    quant=SHARED,
)
