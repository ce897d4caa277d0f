"""tosa.rescale (a requantization the quantizer left as dequantize -> quantize) -> RESCALE."""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext
from pipeline.quant.rules import COVERAGE
from pipeline.tosa.registry import Operator, lowers


@lowers("tosa.rescale")
def visit_rescale(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    emit.requantize(
        ctx, node, ctx.tensor(x), ctx.qparams(x), ctx.qparams(node), out=ctx.define(node)
    )


OPERATOR = Operator(
    "tosa.rescale (a requantization the quantizer left as dequantize -> quantize) -> RESCALE",
    quant=COVERAGE,
    profiles=("INT",),
)
