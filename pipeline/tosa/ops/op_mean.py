"""aten.mean.dim -> int32 REDUCE_SUMs and one RESCALE, or RESHAPE -> AVG_POOL2D -> RESHAPE.

An int8 mean has output qparams of its own (``MEAN``; int16 shares its input's): an average spans a narrower range than
what it averages (a global pool of relu6 features: [0, 6] in, [0, 1] out), and in the input's
int8 grid its rounding reached the classifier 4 dB louder (generated depthwise nets,
``benchmarks/bench_numerics.py``; ExecuTorch quantizes its sum and its scaling apart too).

Quantized, ``x - zp`` is summed in int32 with one REDUCE_SUM per run of adjacent dims
(``reduction.sum_runs``: exact, native over depth on Ethos-U, no TRANSPOSE) and one RESCALE
by ``scale_in / (count * scale_out)`` rounds once, into the output's own grid; a pool would
round to the input's grid first, and a RESCALE after it round again. Float, or quantized
where the output's grid is the input's: reduced dims adjacent in the TOSA tensor
(``x.mean((2, 3))`` of an NHWC image, ``x.mean(1)`` of a token sequence) with something after
them are viewed as ``[1, outer, reduced, inner]`` (NHWC: H = outer, W = reduced, C = inner)
and averaged with a ``1 x reduced`` kernel, one rounding per output like torch's float mean
then quantize; float dims apart are pooled run by run (the mean of the means of equal-sized
groups is the mean).
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.emit.pooling import pool_geometry
from pipeline.tosa.emit.reduction import reduction, sum_runs
from pipeline.quant.rules import MEAN
from pipeline.tosa.registry import Operator, lowers


@lowers("aten.mean.dim")
def visit_mean(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    r = reduction(node, ctx)
    x_q = ctx.qparams(x)
    own_grid = x_q is not None and not emit.same_quantization(x_q, ctx.qparams(node))
    if x_q is not None and (r.inner == 1 or not r.adjacent or own_grid):
        pooled, produced = _mean_of_sums(ctx, node, r), ctx.qparams(node)
    else:
        pooled, produced = ctx.tensor(x), x_q
        for outer, reduced, inner in r.steps():
            pooled = _pool(ctx, node, pooled, outer, reduced, inner)
    kept, order = r.result_layout(x)
    # No same-shape RESHAPE: the pass that drops it would take the mean's own tensor with it,
    # and verify compares each quantized value at its tensor.
    same_shape = tuple(kept) == tuple(ctx.graph.tensors[pooled].shape)
    result = pooled if same_shape else emit.reshape(ctx, node, pooled, kept)
    same = x_q is None or emit.same_quantization(produced, ctx.qparams(node))
    out = emit.relayout(ctx, node, result, order, torch_shape(node), dim_order(node), define=same)
    if not same:
        emit.finish_int(ctx, node, out, produced)


def _pool(ctx: LoweringContext, node: fx.Node, src: str, outer: int, reduced: int, inner: int):
    """AVG_POOL2D of ``src`` viewed as [1, outer, reduced, inner] over W: [1, outer, 1, inner]
    in the input's quantization."""
    x_q = ctx.qparams(node.args[0])
    view = emit.reshape(ctx, node, src, (1, outer, reduced, inner))
    dtype, zp = (x_q.dtype, x_q.zero_point) if x_q else (ctx.dtype(node.args[0]), 0)
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


def _mean_of_sums(ctx: LoweringContext, node: fx.Node, r) -> str:
    """int32 sums of ``x - zp`` over the reduced dims, RESCALEd by 1/count into the node's
    qparams."""
    x_q, out_q = ctx.qparams(node.args[0]), ctx.qparams(node)
    return emit.rescale(
        ctx, node, sum_runs(ctx, node, r), [x_q.tensor_scale / (r.count * out_q.tensor_scale)],
        in_zp=0, out_zp=out_q.zero_point, out_dtype=out_q.dtype,
    )  # fmt: skip


OPERATOR = Operator(
    "mean over dims -> int32 REDUCE_SUMs and one RESCALE, or AVG_POOL2D between RESHAPEs",
    quant=MEAN,
)
