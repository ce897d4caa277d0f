"""aten.mean.dim -> RESHAPE -> AVG_POOL2D -> RESHAPE (no REDUCE_SUM: Vela has no NPU op for it).

The reduced dims must be adjacent in the TOSA tensor (``x.mean((2, 3))`` of an NHWC image,
``x.mean(-1)`` of tokens, ``x.mean(1)`` = channels of an image; ``reduction.py``). The
tensor is viewed as
``[1, outer, reduced, inner]`` (NHWC: H = outer, W = reduced, C = inner) and averaged with a
``1 x reduced`` kernel: one rounding per output, like torch's float mean then quantize.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.pooling import pool_geometry
from pipeline.tosa.reduction import reduction
from pipeline.tosa.registry import lowers


@lowers("aten.mean.dim")
def visit_mean(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    r = reduction(node, ctx)
    x_q = ctx.qparams(x)
    if r.inner == 1 and x_q is not None:
        pooled, produced = _channel_sum(ctx, node, r.outer, r.reduced), ctx.qparams(node)
    else:
        pooled, produced = _pool(ctx, node, r.outer, r.reduced, r.inner), x_q
    kept, order = r.result_layout(x)
    # No same-shape RESHAPE: the pass that drops it would take the mean's own tensor with it,
    # and verify compares each quantized value at its tensor.
    same_shape = tuple(kept) == tuple(ctx.graph.tensors[pooled].shape)
    result = pooled if same_shape else emit.reshape(ctx, node, pooled, kept)
    same = x_q is None or emit.same_quantization(produced, ctx.qparams(node))
    out = emit.relayout(ctx, node, result, order, torch_shape(node), dim_order(node), define=same)
    if not same:
        emit.finish_int(ctx, node, out, produced)


def _pool(ctx: LoweringContext, node: fx.Node, outer: int, reduced: int, inner: int) -> str:
    """AVG_POOL2D of the input viewed as [1, outer, reduced, inner] over W: [1, outer, 1, inner]
    in the input's quantization."""
    x = node.args[0]
    view = emit.reshape(ctx, node, ctx.tensor(x), (1, outer, reduced, inner))
    x_q = ctx.qparams(x)
    dtype, zp = (x_q.dtype, x_q.zero_point) if x_q else (ctx.dtype(x), 0)
    pooled = ctx.temp(node, "pooled", (1, outer, 1, inner), dtype)
    # Stride 1: the output is one column anyway, and Ethos-U55 pools only with strides 1..3.
    attrs, _ = pool_geometry((outer, reduced), (1, reduced), (1, 1), 0)
    inputs = [
        view,
        ctx.zero_point(f"{node.name}_input_zp", zp, dtype),
        ctx.zero_point(f"{node.name}_output_zp", zp, dtype),
    ]
    ctx.emit("AVG_POOL2D", inputs, [pooled], node, acc_type="int32" if x_q else "fp32", **attrs)
    return pooled


def _channel_sum(ctx: LoweringContext, node: fx.Node, outer: int, reduced: int) -> str:
    """Mean over the innermost dim as int32 REDUCE_SUM (native over depth on Ethos-U; a pool
    there would have one channel) and one RESCALE by 1/count into the node's qparams."""
    x = node.args[0]
    x_q, out_q = ctx.qparams(x), ctx.qparams(node)
    view = emit.reshape(ctx, node, ctx.tensor(x), (1, 1, outer, reduced))
    wide = emit.rescale(
        ctx, node, view, [1.0], in_zp=x_q.zero_point, out_zp=0, out_dtype="int32", suffix="wide"
    )
    total = ctx.temp(node, "sum", (1, 1, outer, 1), "int32")
    ctx.emit("REDUCE_SUM", [wide], [total], node, axis=3)
    return emit.rescale(
        ctx, node, total, [x_q.tensor_scale / (reduced * out_q.tensor_scale)],
        in_zp=0, out_zp=out_q.zero_point, out_dtype=out_q.dtype,
    )  # fmt: skip
