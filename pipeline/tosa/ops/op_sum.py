"""aten.sum (over dims, or all) -> RESHAPE -> REDUCE_SUM -> RESHAPE (int: RESCALEs around it).

The reduced dims must be adjacent in the TOSA tensor, as for mean (``op_mean.py``, whose dim
handling this shares): the tensor is viewed as ``[1, outer, reduced, inner]`` and summed over
the reduced axis, or as ``[1, 1, outer, reduced]`` over depth when nothing follows the reduced
dims (native on Ethos-U; over another axis Vela transposes around it).

Quantized, a sum is a mean with another output scale, but not mean's pool: AVG_POOL2D rounds
the average to the input's scale, and multiplying that by the count multiplies its rounding
error too (several LSBs). Instead ``x - zp`` is widened to int32 (REDUCE_SUM is int32-only),
summed exactly, and one RESCALE by ``scale_in / scale_out`` rounds once, as torch's q/dq graph
does. int32 holds the sum: ``count * (qmax - qmin)`` is checked against it.
"""

from __future__ import annotations

import math

from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.ops.op_mean import _kept_order, _reduced_positions
from pipeline.tosa.registry import lowers

_INT32_MAX = 2**31 - 1


@lowers("aten.sum.dim_IntList", "aten.sum.default")
def visit_sum(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    keepdim = bool(node.args[2]) if len(node.args) > 2 else bool(node.kwargs.get("keepdim"))
    if node.kwargs.get("dtype") is not None:
        raise ctx.unsupported(node, f"dtype={node.kwargs['dtype']}", "no dtype")
    # sum(x, []) sums every dim, like sum(x)
    positions = _reduced_positions(node) or list(range(len(torch_shape(x))))
    if positions != list(range(positions[0], positions[-1] + 1)):
        raise ctx.unsupported(
            node, "dims not adjacent in the tensor's layout", "adjacent dims (e.g. H and W)"
        )
    shape = ctx.graph.tensors[ctx.tensor(x)].shape
    outer = math.prod(shape[: positions[0]])
    reduced = math.prod(shape[positions[0] : positions[-1] + 1])
    inner = math.prod(shape[positions[-1] + 1 :])
    total = _reduce_sum(ctx, node, outer, reduced, inner)
    kept = [s for i, s in enumerate(shape) if i not in positions]
    order = _kept_order(dim_order(x), positions)
    if keepdim:  # size-1 dims where the reduced ones were: the input's order still holds
        kept, order = [1 if i in positions else s for i, s in enumerate(shape)], dim_order(x)
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
