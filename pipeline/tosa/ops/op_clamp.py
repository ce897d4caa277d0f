"""aten.relu / relu6 / hardtanh / clamp -> CLAMP.

Quantized, the bounds are the quantized images of the float bounds: quantization is monotonic
and maps 0.0 to the zero point exactly, so ``q(clamp(y, lo, hi)) == clamp(q(y), q(lo), q(hi))``
bit for bit. Most activations never get here: ``fuse_activation_pass`` folds them into the
producer's output RESCALE when the bounds are the integer type's own range.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.activation import TARGETS, float_bounds
from pipeline.tosa.context import LoweringContext
from pipeline.tosa.registry import lowers


@lowers(*TARGETS)
def visit_clamp(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    lo, hi = float_bounds(node)
    out_q = ctx.qparams(node)
    if out_q is None:
        ctx.emit(
            "CLAMP",
            [ctx.tensor(x)],
            [ctx.define(node)],
            node,
            min_val=lo,
            max_val=hi,
            nan_mode="PROPAGATE",
        )
        return
    source = ctx.tensor(x)
    if not emit.same_quantization(ctx.qparams(x), out_q):
        source = emit.requantize(ctx, node, source, ctx.qparams(x), out_q)
    ctx.emit(
        "CLAMP",
        [source],
        [ctx.define(node)],
        node,
        min_val=out_q.quantize(lo),
        max_val=out_q.quantize(hi),
        nan_mode="PROPAGATE",
    )
