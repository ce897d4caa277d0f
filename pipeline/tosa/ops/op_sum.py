"""aten.sum (over dims, or all) -> RESHAPE -> REDUCE_SUM -> RESHAPE (int: RESCALEs around it).

The reduced dims are summed as ``reduction.sum_runs`` describes: adjacent ones by one
REDUCE_SUM over ``[1, outer, reduced, inner]`` (or over depth, native on Ethos-U, when nothing
follows them), dims apart in the layout by one REDUCE_SUM per run of adjacent ones.

Quantized, a sum is a mean with another output scale, but not mean's pool: AVG_POOL2D rounds
the average to the input's scale, and multiplying that by the count multiplies its rounding
error too (several LSBs). Instead ``x - zp`` is widened to int32 (REDUCE_SUM is int32-only),
summed exactly, and one RESCALE by ``scale_in / scale_out`` rounds once, as torch's q/dq graph
does. int32 holds the sum: ``count * (qmax - qmin)`` is checked against it.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.emit.reduction import reduction, sum_runs
from pipeline.tosa.registry import lowers


@lowers("aten.sum.dim_IntList", "aten.sum.default")
def visit_sum(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    r = reduction(node, ctx)
    total = sum_runs(ctx, node, r)
    x_q, out_q = ctx.qparams(x), ctx.qparams(node)
    if x_q is not None:
        total = emit.rescale(
            ctx, node, total, [x_q.tensor_scale / out_q.tensor_scale],
            in_zp=0, out_zp=out_q.zero_point, out_dtype=out_q.dtype,
        )  # fmt: skip
    kept, order = r.result_layout(x)
    result = emit.reshape(ctx, node, total, kept)
    emit.relayout(ctx, node, result, order, torch_shape(node), dim_order(node), define=True)
