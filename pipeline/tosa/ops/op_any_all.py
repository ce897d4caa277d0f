"""aten.any / aten.all of a bool tensor -> REDUCE_ANY / REDUCE_ALL per reduced dim (exact).

A number tensor reaches here compared with 0 first (``pipeline/normalise/reductions.py``).
Ethos-U55/U65 take neither operator (``pipeline/ethosu/placement.py`` names it); Ethos-U85 does.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import COVERAGE
from pipeline.tosa.registry import Operator, lowers
from pipeline.fx import target_name

REDUCTIONS = {
    **{f"aten.any.{form}": "REDUCE_ANY" for form in ("default", "dim", "dims")},
    **{f"aten.all.{form}": "REDUCE_ALL" for form in ("default", "dim", "dims")},
}


@lowers(*REDUCTIONS)
def visit_any_all(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    if ctx.dtype(x) != "bool":
        raise ctx.unsupported(node, f"a {ctx.dtype(x)} input", "a bool input")
    rank = len(torch_shape(x))
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if dim is None or (isinstance(dim, (list, tuple)) and not dim):
        dims = list(range(rank))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    current = ctx.tensor(x)
    for d in sorted({int(d) % rank for d in dims}):
        axis = list(dim_order(x)).index(d)
        shape = list(ctx.graph.tensors[current].shape)
        shape[axis] = 1
        reduced = ctx.temp(node, "reduced", shape, "bool")
        ctx.emit(REDUCTIONS[target_name(node.target)], [current], [reduced], node, axis=axis)
        current = reduced
    emit.relayout(ctx, node, current, dim_order(x), torch_shape(node), dim_order(node), True)


OPERATOR = Operator(
    "any / all of a bool tensor -> REDUCE_ANY / REDUCE_ALL per reduced dim",
    quant=COVERAGE,
)
