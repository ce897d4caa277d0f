"""aten.sub.Tensor -> SUB (int: RESCALE both inputs to a common int32 scale, SUB, RESCALE out;
see ``pipeline/tosa/elementwise.py``)."""

from __future__ import annotations

from torch import fx

from pipeline.tosa.context import LoweringContext
from pipeline.tosa.elementwise import emit_add_sub
from pipeline.tosa.registry import lowers
from pipeline.tosa.saturation import emit_masked, masked_operands


@lowers("aten.sub.Tensor")
def visit_sub(node: fx.Node, ctx: LoweringContext) -> None:
    if node.kwargs.get("alpha", 1) != 1:
        raise ctx.unsupported(node, f"alpha={node.kwargs['alpha']}", "alpha=1")
    masked = masked_operands(node, ctx)  # an attention mask: saturation.py
    if masked:
        emit_masked(ctx, node, "SUB", *masked)
        return
    emit_add_sub(node, ctx, "SUB")
