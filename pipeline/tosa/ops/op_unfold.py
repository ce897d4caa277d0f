"""aten.unfold (``x.unfold(dim, size, step)``: sliding windows, the window as a new last dim)
-> the windows' elements taken along ``dim`` in one go, then a RESHAPE (and a TRANSPOSE when
the window dim must move past others).

Window ``i`` element ``j`` is ``x[i * step + j]`` along ``dim``: constant indices, so
``movement.take`` picks the cheapest form - SLICEs and a CONCAT when the windows are long
runs (``step >= size``: each window is one), a one-hot CONV2D along the innermost axis, else
a GATHER of rows (on Ethos-U55/U65 a one-hot CONV2D in its variant). The elements are
moved only: the output shares the input's quantization.
"""

from __future__ import annotations

import numpy as np
from torch import fx

from pipeline.tosa.emit import common as emit, movement
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers


@lowers("aten.unfold.default")
def visit_unfold(node: fx.Node, ctx: LoweringContext) -> None:
    x, dim, size, step = node.args[:4]
    if ctx.qparams(x) is not None and not emit.same_quantization(ctx.qparams(x), ctx.qparams(node)):
        raise ctx.unsupported(node, "input and output quantized differently", "shared qparams")
    shape, order = torch_shape(x), list(dim_order(x))
    rank = len(shape)
    dim = int(dim) % rank if rank else 0
    windows = torch_shape(node)[dim]
    indices = (np.arange(windows)[:, None] * int(step) + np.arange(int(size))).reshape(-1)
    axis = order.index(dim)
    picked = movement.take(ctx, node, ctx.tensor(x), axis, indices)
    tosa = list(ctx.graph.tensors[picked].shape)
    split = movement.reshape(ctx, node, picked, [*tosa[:axis], windows, int(size), *tosa[axis + 1 :]])
    split_order = [*order[:axis], dim, rank, *order[axis + 1 :]]
    emit.relayout(ctx, node, split, split_order, torch_shape(node), dim_order(node), True)


OPERATOR = Operator(
    "unfold (sliding windows) -> SLICEs and a CONCAT, or a GATHER",
    quant=SHARED,
)
