"""aten.flip (``x.flip(1)``, ``torch.flip(x, (-2, -1))``) -> one REVERSE per run of flipped axes.

Flipping adjacent axes (in TOSA order) together is reversing them as one, so each run of
flipped axes - size-1 axes bridge runs - is one REVERSE of the tensor seen as ``[outer,
run, inner]``, whose middle axis is the W axis Ethos-U55/U65 reverse (``movement.reverse``).
Values are moved only: the output shares the input's quantization.
"""

from __future__ import annotations

import math

from torch import fx

from pipeline.tosa.emit import common as emit, movement
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers


def flipped_runs(shape, axes) -> list[tuple[int, int]]:
    """``[lo, hi)`` runs of ``axes`` (size-1 axes join any run) with something to reverse."""
    found, lo = [], None
    for i in range(len(shape) + 1):
        inside = i < len(shape) and (i in axes or shape[i] == 1)
        if inside and lo is None:
            lo = i
        elif not inside and lo is not None:
            if any(a in axes and shape[a] > 1 for a in range(lo, i)):
                found.append((lo, i))
            lo = None
    return found


@lowers("aten.flip.default")
def visit_flip(node: fx.Node, ctx: LoweringContext) -> None:
    x, dims = node.args[:2]
    if ctx.qparams(x) is not None and not emit.same_quantization(ctx.qparams(x), ctx.qparams(node)):
        raise ctx.unsupported(node, "input and output quantized differently", "shared qparams")
    rank, order = len(torch_shape(x)), list(dim_order(x))
    source = ctx.tensor(x)
    shape = ctx.graph.tensors[source].shape
    for lo, hi in flipped_runs(shape, {order.index(int(d) % rank) for d in dims}):
        merged = (*shape[:lo], math.prod(shape[lo:hi]), *shape[hi:])
        flat = movement.reshape(ctx, node, source, merged)
        source = movement.reshape(ctx, node, movement.reverse(ctx, node, flat, lo), shape)
    emit.relayout(ctx, node, source, order, torch_shape(node), dim_order(node), True)


OPERATOR = Operator(
    "flip -> one REVERSE per run of flipped axes",
    quant=SHARED,
)
