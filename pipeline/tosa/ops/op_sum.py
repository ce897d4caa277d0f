"""aten.sum (over dims, or all) -> RESHAPE -> REDUCE_SUM -> RESHAPE (int: RESCALEs around it).

The reduced dims must be adjacent in the TOSA tensor, as for mean (``reduction.py``): the
tensor is viewed as ``[1, outer, reduced, inner]`` and summed over the reduced axis, or as
``[1, 1, outer, reduced]`` over depth when nothing follows the reduced dims (native on
Ethos-U; over another axis Vela transposes around it).

Quantized, a sum is a mean with another output scale, but not mean's pool: AVG_POOL2D rounds
the average to the input's scale, and multiplying that by the count multiplies its rounding
error too (several LSBs). Instead ``x - zp`` is widened to int32 (REDUCE_SUM is int32-only),
summed exactly, and one RESCALE by ``scale_in / scale_out`` rounds once, as torch's q/dq graph
does. int32 holds the sum: ``count * (qmax - qmin)`` is checked against it.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.reduction import reduction
from pipeline.tosa.registry import lowers

_INT32_MAX = 2**31 - 1


@lowers("aten.sum.dim_IntList", "aten.sum.default")
def visit_sum(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    r = reduction(node, ctx)
    total = _reduce_sum(ctx, node, r.outer, r.reduced, r.inner)
    kept, order = r.result_layout(x)
    result = emit.reshape(ctx, node, total, kept)
    emit.relayout(ctx, node, result, order, torch_shape(node), dim_order(node), define=True)


def _reduce_sum(ctx: LoweringContext, node: fx.Node, outer: int, reduced: int, inner: int):
    """REDUCE_SUM of the input viewed as described above: ``[1, outer, 1, inner]`` values in
    the node's own quantization (or float)."""
    x = node.args[0]
    x_q, out_q = ctx.qparams(x), ctx.qparams(node)
    view, axis = ((1, 1, outer, reduced), 3) if inner == 1 else ((1, outer, reduced, inner), 2)
    source = emit.reshape(ctx, node, ctx.tensor(x), view)
    if x_q is not None:
        if reduced * (x_q.qmax - x_q.qmin) > _INT32_MAX:
            raise ctx.unsupported(node, f"{reduced} {x_q.dtype} values", "a sum int32 holds")
        source = emit.rescale(
            ctx, node, source, [1.0], in_zp=x_q.zero_point, out_zp=0, out_dtype="int32",
            suffix="wide",
        )  # fmt: skip
    summed = list(view)
    summed[axis] = 1
    total = ctx.temp(node, "sum", summed, "int32" if x_q else ctx.dtype(x))
    ctx.emit("REDUCE_SUM", [source], [total], node, axis=axis)
    if x_q is None:
        return total
    return emit.rescale(
        ctx, node, total, [x_q.tensor_scale / out_q.tensor_scale],
        in_zp=0, out_zp=out_q.zero_point, out_dtype=out_q.dtype,
    )  # fmt: skip
