"""aten.slice_scatter / select_scatter (``x[:, 2:5] = y``, ``x[:, 1::2] += y``, ``x[:, 0] = v``
written functionally) -> CONCAT of ``x``'s untouched pieces and the values.

A step above 1 interleaves: the covered span of ``x`` seen as ``[outer, count, step, inner]``
blocks gets the values as one column of the blocks (``movement.interleave``). Only values
move: the quantizer gives ``x``, the values and the output one quantization, so the result
is both inputs' integers bit for bit (a values tensor quantized otherwise is RESCALEd
first). ``select_scatter`` is kept from torch's decomposition (a SELECT of a broadcast
constant mask) because the CONCAT moves each value once, and runs on Ethos-U55 as it is.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit, movement
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.ops.op_slice import bounds
from pipeline.quant.rules import shared_inputs
from pipeline.tosa.registry import Operator, lowers


def _scatter(ctx, node, x: fx.Node, values: fx.Node, dim: int, start: int, step: int) -> None:
    order = dim_order(x)
    shape = list(torch_shape(x))
    shape[dim] = torch_shape(values)[dim] if len(torch_shape(values)) == len(shape) else 1
    source = ctx.tensor(x)
    if not emit.same_quantization(ctx.qparams(x), ctx.qparams(node)):
        raise ctx.unsupported(node, "input and output quantized differently", "shared qparams")
    placed = movement.shared_values(ctx, node, values, shape, order)
    axis = list(order).index(dim)
    merged = movement.interleave(ctx, node, source, placed, axis, start, step)
    emit.relayout(ctx, node, merged, order, torch_shape(node), dim_order(node), True)


@lowers("aten.slice_scatter.default")
def visit_slice_scatter(node: fx.Node, ctx: LoweringContext) -> None:
    args = list(node.args) + [0, None, None, 1][len(node.args) - 2 :]
    x, values, dim, start, end, step = args[:6]
    dim = int(dim) % len(torch_shape(x))
    start, _ = bounds(torch_shape(x)[dim], start, end)
    _scatter(ctx, node, x, values, dim, start, int(step or 1))


@lowers("aten.select_scatter.default")
def visit_select_scatter(node: fx.Node, ctx: LoweringContext) -> None:
    x, values, dim, index = node.args[:4]
    dim = int(dim) % len(torch_shape(x))
    _scatter(ctx, node, x, values, dim, int(index) % torch_shape(x)[dim], 1)


OPERATOR = Operator(
    "slice_scatter / select_scatter (x[:, 2:5] = y) -> SLICEs and a CONCAT",
    quant=shared_inputs(0, 1),
)
