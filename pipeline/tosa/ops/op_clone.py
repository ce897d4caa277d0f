"""aten.clone -> nothing: the output is the input's tensor (an IDENTITY only if it is a
graph output, which the driver adds)."""

from __future__ import annotations

from torch import fx

from pipeline.tosa.context import LoweringContext
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers


@lowers("aten.clone.default")
def visit_clone(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    if ctx.qparams(x) != ctx.qparams(node) and ctx.qparams(node) is not None:
        raise ctx.unsupported(node, "input and output quantized differently", "shared qparams")
    ctx.tensors[node] = ctx.tensor(x)


OPERATOR = Operator(
    "clone -> nothing: the input's tensor (an IDENTITY only for a graph output)",
    quant=SHARED,
)
