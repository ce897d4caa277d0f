"""aten.relu / relu6 / hardtanh / clamp -> CLAMP.

Quantized, the bounds are the quantized images of the float bounds: quantization is monotonic
and maps 0.0 to the zero point exactly, so ``q(clamp(y, lo, hi)) == clamp(q(y), q(lo), q(hi))``
bit for bit. Most activations never get here: ``fuse_activation_pass`` folds them into the
producer's output RESCALE when the bounds are the integer type's own range.
"""

from __future__ import annotations

import math

import numpy as np
from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.emit.activation import FLOAT_MAX, TARGETS, float_bounds
from pipeline.tosa.context import LoweringContext
from pipeline.quant.rules import ACTIVATION
from pipeline.tosa.registry import Operator, lowers


@lowers(*TARGETS)
def visit_clamp(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    lo, hi = float_bounds(node)
    out_q = ctx.qparams(node)
    if out_q is None and ctx.dtype(x) == "int32":
        _clamp_int32(node, ctx, lo, hi)
        return
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


def _clamp_int32(node: fx.Node, ctx: LoweringContext, lo: float, hi: float) -> None:
    """An int32 tensor (ids, counts; never quantized): TOSA's CLAMP takes no int32, so
    MAXIMUM by the lower bound and MINIMUM by the upper one (exact)."""
    current = ctx.tensor(node.args[0])
    shape = ctx.graph.tensors[current].shape
    steps = [("MAXIMUM", lo, math.ceil), ("MINIMUM", hi, math.floor)]
    steps = [step for step in steps if abs(step[1]) < FLOAT_MAX]
    if not steps:  # no bound at all
        ctx.tensors[node] = current
        return
    for i, (op, bound, rounded) in enumerate(steps):
        value = int(min(max(rounded(bound), -(2**31)), 2**31 - 1))
        const = ctx.graph.add_const(
            f"{node.name}_{op.lower()}", np.full((1,) * len(shape), value, np.int32), "int32"
        )
        last = i == len(steps) - 1
        out = ctx.define(node) if last else ctx.temp(node, op.lower(), shape, "int32")
        ctx.emit(op, [current, const], [out], node, nan_mode="PROPAGATE")
        current = out


OPERATOR = Operator(
    "relu / relu6 / hardtanh / clamp -> CLAMP (folded into a producer's RESCALE)",
    quant=ACTIVATION,
)
