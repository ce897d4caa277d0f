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

import math

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.emit.reduction import reduction, sum_runs
from pipeline.quant.rules import REDUCTION
from pipeline.tosa.registry import Operator, U55_U65, lowers


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


MAX_AXIS = 65536  # Vela 5.2's limit on Ethos-U55/U65 axes


def _input_zero_point(op) -> int:
    """The zero point a RESCALE in front of the sum subtracts (Vela then runs the pair as one
    CONV2D, with that operator's limits), else 0."""
    source = op.producers[0] if op.producers else None
    if source is None or source.op != "RESCALE" or len(source.inputs) <= 3:
        return 0
    data = source.inputs[3].data
    return int(data.reshape(-1)[0]) if data is not None and data.size else 0


def u55_reduce_sum(op) -> tuple[str, str] | None:
    """Along a non-channel axis, the axes before it and the axes after it must each hold at
    most 65536 values (Vela's table); when the sum's input RESCALE subtracts a zero point Vela
    runs the pair as one CONV2D, and then the reduced axis must be at most 65536 too
    (measured: with zero point 0 it sums 140,000 values)."""
    if "axis" not in op.attrs:
        return None
    shape, axis = op.inputs[0].shape, op.attrs["axis"]
    before, after = math.prod(shape[:axis]), math.prod(shape[axis + 1 :])
    if axis != len(shape) - 1 and max(before, after) > MAX_AXIS:
        return f"have at most {MAX_AXIS} values before and after a non-channel axis it sums", (
            f"shape {list(shape)} summed along axis {axis}"
        )
    zero_point = _input_zero_point(op)
    if zero_point and shape[axis] > MAX_AXIS:
        return f"sum at most {MAX_AXIS} values of an input with a zero point", (
            f"{shape[axis]} values with zero point {zero_point}"
        )
    return None


OPERATOR = Operator(
    "sum over dims -> REDUCE_SUM between RESHAPEs (int: RESCALEs around it)",
    quant=REDUCTION,
    npu={U55_U65: {"REDUCE_SUM": u55_reduce_sum}},
)
