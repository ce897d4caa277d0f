"""aten.add.Tensor -> ADD (int: RESCALE both inputs to a common int32 scale, ADD, RESCALE out;
see ``pipeline/tosa/emit/elementwise.py``), ``alpha`` included: ``torch.add(x, y, alpha=2)``.

int8 with a number (``x + 0.5``) is a function of one int8 input: one TABLE,
exact and cheaper (Vela 5.2, 4096 values: Ethos-U55-128 4,672 vs 16,384 cycles for the
RESCALE + ADD + RESCALE form; U85-256 3,648 vs 6,848)."""

from __future__ import annotations

from torch import fx

from pipeline.tosa.context import LoweringContext
from pipeline.tosa.emit.elementwise import emit_add_sub, is_int8_function
from pipeline.tosa.ops.op_table import emit_int8_table
from pipeline.quant.rules import BINARY, masked_sum
from pipeline.tosa.registry import Operator, lowers
from pipeline.tosa.emit.saturation import emit_masked, masked_operands


@lowers("aten.add.Tensor")
def visit_add(node: fx.Node, ctx: LoweringContext) -> None:
    masked = masked_operands(node, ctx)  # an attention mask: saturation.py
    if masked:
        if node.kwargs.get("alpha", 1) != 1:
            raise ctx.unsupported(node, f"alpha={node.kwargs['alpha']} on a mask", "alpha=1")
        emit_masked(ctx, node, "ADD", *masked)
        return
    if is_int8_function(node, ctx):  # x + 0.5: one exact TABLE
        emit_int8_table(node, ctx)
        return
    emit_add_sub(node, ctx, "ADD")


OPERATOR = Operator(
    "x + y (alpha too) -> RESCALEs around an int32 ADD; a number added to int8 -> one TABLE",
    quant=(masked_sum(), BINARY),
)
