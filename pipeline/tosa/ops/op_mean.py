"""aten.mean.dim -> RESHAPE -> AVG_POOL2D -> RESHAPE (no REDUCE_SUM: Vela has no NPU op for it).

The reduced dims must be adjacent in the TOSA tensor (``x.mean((2, 3))`` of an NHWC image,
``x.mean(-1)`` of tokens, ``x.mean(1)`` = channels of an image). The tensor is viewed as
``[1, outer, reduced, inner]`` (NHWC: H = outer, W = reduced, C = inner) and averaged with a
``1 x reduced`` kernel: one rounding per output, like torch's float mean then quantize.
"""

from __future__ import annotations

import math

from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.pooling import pool_geometry
from pipeline.tosa.registry import lowers


def _reduced_positions(node: fx.Node) -> list[int]:
    """Positions in the input's TOSA order of the dims ``node`` averages over."""
    x = node.args[0]
    rank = len(torch_shape(x))
    dims = node.args[1] if len(node.args) > 1 and node.args[1] is not None else range(rank)
    dims = {int(d) % rank for d in dims}
    return sorted(i for i, d in enumerate(dim_order(x)) if d in dims)


def _kept_order(order, positions) -> tuple[int, ...]:
    """The input's dim order with the reduced positions removed, renumbered 0..k-1."""
    kept = [d for i, d in enumerate(order) if i not in positions]
    return tuple(sorted(kept).index(d) for d in kept)


@lowers("aten.mean.dim")
def visit_mean(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    keepdim = bool(node.args[2]) if len(node.args) > 2 else bool(node.kwargs.get("keepdim"))
    if node.kwargs.get("dtype") is not None:
        raise ctx.unsupported(node, f"dtype={node.kwargs['dtype']}", "no dtype")
    positions = _reduced_positions(node)
    if positions != list(range(positions[0], positions[-1] + 1)):
        raise ctx.unsupported(
            node, "dims not adjacent in the tensor's layout", "adjacent dims (e.g. H and W)"
        )
    shape = ctx.graph.tensors[ctx.tensor(x)].shape
    outer = math.prod(shape[: positions[0]])
    reduced = math.prod(shape[positions[0] : positions[-1] + 1])
    inner = math.prod(shape[positions[-1] + 1 :])
    x_q = ctx.qparams(x)
    if inner == 1 and x_q is not None:
        pooled, produced = _channel_sum(ctx, node, outer, reduced), ctx.qparams(node)
    else:
        pooled, produced = _pool(ctx, node, outer, reduced, inner), x_q
    kept = [s for i, s in enumerate(shape) if i not in positions]
    order = _kept_order(dim_order(x), positions)
    if keepdim:  # size-1 dims where the reduced ones were: the input's order still holds
        kept, order = [1 if i in positions else s for i, s in enumerate(shape)], dim_order(x)
    result = emit.reshape(ctx, node, pooled, kept)
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
