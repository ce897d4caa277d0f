"""aten.slice.Tensor (``x[:, a:b]``, ``narrow``, ``split``; ``x[..., 1::2]``) -> SLICE in the
tensor's TOSA dim order.

A step above 1 is a SLICE of the axis seen as ``[outer, count, step, inner]`` blocks
(``movement.strided``): two RESHAPEs that move nothing and one SLICE (two when the blocks do
not start at the axis' start), on every Ethos-U.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit, movement
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers


def bounds(size: int, start, end) -> tuple[int, int]:
    """torch's clamped ``[start, end)`` of a slice along a dim of ``size``."""
    start, end = int(0 if start is None else start), int(size if end is None else end)
    start = min(max(start + size if start < 0 else start, 0), size)
    end = min(max(end + size if end < 0 else end, 0), size)
    return start, max(start, end)


@lowers("aten.slice.Tensor")
def visit_slice(node: fx.Node, ctx: LoweringContext) -> None:
    args = list(node.args) + [None] * (5 - len(node.args))
    x, dim, start, end, step = args[:5]
    in_shape = torch_shape(x)
    dim = int(dim or 0) % len(in_shape)
    start, _ = bounds(in_shape[dim], start, end)
    axis = list(dim_order(x)).index(dim)
    count = torch_shape(node)[dim]
    picked = movement.strided(ctx, node, ctx.tensor(x), axis, start, int(step or 1), count)
    emit.relayout(ctx, node, picked, dim_order(x), torch_shape(node), dim_order(node), True)


OPERATOR = Operator(
    "slice (x[:, a:b], narrow, split, steps) -> SLICE (steps: RESHAPE and SLICE)",
    quant=SHARED,
)
