"""aten.select.int / select_copy.int -> SLICE (one index along the dim) -> RESHAPE (drop it)."""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers


@lowers("aten.select.int", "aten.select_copy.int")
def visit_select(node: fx.Node, ctx: LoweringContext) -> None:
    x, dim, index = node.args[0], node.args[1], node.args[2]
    in_shape = torch_shape(x)
    dim = int(dim) % len(in_shape)
    index = int(index) % in_shape[dim]
    source = ctx.tensor(x)
    tosa = ctx.graph.tensors[source].shape
    axis = list(dim_order(x)).index(dim)
    start = [index if i == axis else 0 for i in range(len(tosa))]
    size = [1 if i == axis else s for i, s in enumerate(tosa)]
    picked = ctx.temp(node, "slice", size, ctx.graph.tensors[source].dtype)
    inputs = [
        source,
        ctx.const(f"{node.name}_start", start, "shape"),
        ctx.const(f"{node.name}_size", size, "shape"),
    ]
    ctx.emit("SLICE", inputs, [picked], node)
    # picked is x's shape with size 1 at dim, in x's order: a relayout drops that dim.
    emit.relayout(ctx, node, picked, dim_order(x), torch_shape(node), dim_order(node), True)


OPERATOR = Operator(
    "select -> SLICE of one index, RESHAPE to drop the dim",
    quant=SHARED,
)
