"""aten.view / reshape / flatten / squeeze / unsqueeze -> RESHAPE (TRANSPOSE around it only if data must move).

A reshape of an NHWC tensor is a plain RESHAPE when the permutation back to torch's order
only moves size-1 dims (e.g. flatten after global pooling); otherwise the data is put in
torch's order first so the reshape means what it meant in torch.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers


@lowers(
    "aten.view.default",
    "aten.reshape.default",
    "aten._unsafe_view.default",
    "aten.flatten.using_ints",
    "aten.squeeze.dim",
    "aten.squeeze.dims",
    "aten.unsqueeze.default",
)
def visit_reshape(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    x_q = ctx.qparams(x)
    if x_q is None or emit.same_quantization(x_q, ctx.qparams(node)):
        emit.relayout_node(ctx, node, x, define=True)
    else:
        emit.finish_int(ctx, node, emit.relayout_node(ctx, node, x), x_q)


OPERATOR = Operator(
    "view / reshape / flatten / squeeze / unsqueeze -> RESHAPE (TRANSPOSEs around it if data moves)",
    quant=SHARED,
)
