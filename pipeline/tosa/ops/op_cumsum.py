"""aten.cumsum -> a 1x1 CONV2D with constant lower-triangular 0/1 weights (short axes), or a
log-step scan of int32 ADDs (long axes, integer tensors).

Quantized, ``x - zp`` is summed exactly - int32 (int8 input) or int48 (int16) accumulators
hold any prefix - and one RESCALE by ``scale_in / scale_out`` rounds once, as torch's q/dq
graph does (the output has its own qparams: a running sum leaves the input's range).

* CONV2D: the summed axis is made the innermost (channels) axis, TRANSPOSEd if it is not,
  and output channel ``i`` sums input channels ``0..i``: ``K * K`` weights, one MAC each.
* Scan (Hillis-Steele): ``s += s`` shifted by 1, 2, 4, ... along the axis (a PAD of a SLICE),
  ``log2(K)`` int32 ADDs on any axis without a TRANSPOSE; integer tensors (``mask.cumsum(-1)``
  of int64 ids, int32 here) always take it.

Vela 5.2 picks (cycles, ethos-u55-128 / ethos-u85-256, 4 rows): see ``MAX_CONV_AXIS``.
"""

from __future__ import annotations

import numpy as np
from torch import fx

from pipeline.tosa.emit import common as emit, movement
from pipeline.tosa import layout
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import REDUCTION
from pipeline.tosa.registry import Operator, lowers

MAX_CONV_AXIS = 1024  # longer axes are scanned: the weights grow with K * K
MAX_DEPTHWISE_AXIS = 32  # a middle axis up to this long: Kx1 depthwise kernel, no TRANSPOSE
ACC = {"int8": "int32", "int16": "int48", "fp32": "fp32"}


def _conv(ctx, node, src: str, zp: int, dtype: str, narrow) -> str:
    """Cumulative sums along the innermost axis of ``src`` (``[..., K]``), ``narrow``ed from
    the accumulator (int48 has no RESHAPE)."""
    shape = movement.shape_of(ctx, src)
    k, acc = shape[-1], ACC[dtype]
    weight_type = "fp32" if acc == "fp32" else "int8"
    weights = np.tril(np.ones((k, k))).reshape(k, 1, 1, k)
    image = movement.reshape(ctx, node, src, (1, 1, int(np.prod(shape[:-1])), k))
    inputs = [
        image,
        ctx.const(f"{node.name}_triangle", weights.astype(np.float32 if acc == "fp32" else np.int8),
                  weight_type),
        ctx.const(f"{node.name}_bias", np.zeros(k, np.float32 if acc == "fp32" else np.int64), acc),
        ctx.zero_point(f"{node.name}_input_zp", zp, dtype),
        ctx.zero_point(f"{node.name}_weight_zp", 0, weight_type),
    ]  # fmt: skip
    summed = ctx.temp(node, "prefix", movement.shape_of(ctx, image), acc)
    ctx.emit("CONV2D", inputs, [summed], node, pad=[0, 0, 0, 0], stride=[1, 1], dilation=[1, 1],
             local_bound=False, acc_type=acc)  # fmt: skip
    return movement.reshape(ctx, node, narrow(summed), shape)


def _scan(ctx, node, src: str, axis: int) -> str:
    """Cumulative sums along ``axis`` of an int32 (or float) tensor: ``s + shift(s, d)`` for
    d = 1, 2, 4, ..., the shift a SLICE padded with zeros in front."""
    shape, dtype = movement.shape_of(ctx, src), ctx.graph.tensors[src].dtype
    total, shift = src, 1
    while shift < shape[axis]:
        kept = movement.cut(ctx, node, total, axis, 0, shape[axis] - shift)
        pads = [v for i in range(len(shape)) for v in ((shift, 0) if i == axis else (0, 0))]
        moved = ctx.temp(node, f"shifted{shift}", shape, dtype)
        ctx.emit("PAD", [kept, ctx.const(f"{node.name}_pads", pads, "shape"),
                         ctx.zero_point(f"{node.name}_pad_const", 0, dtype)], [moved], node)
        added = ctx.temp(node, f"scan{shift}", shape, dtype)
        ctx.emit("ADD", [total, moved], [added], node)
        total, shift = added, shift * 2
    return total


def _depthwise(ctx, node, src: str, axis: int, zp: int, dtype: str, narrow) -> str:
    """Cumulative sums along a middle axis: ``[outer, K, 1, inner]`` through a Kx1 depthwise
    kernel of ones with K - 1 rows of padding on top (TOSA adds nothing for padding)."""
    shape = movement.shape_of(ctx, src)
    outer, k, inner = movement.view3(ctx, src, axis)
    acc = ACC[dtype]
    weight_type = "fp32" if acc == "fp32" else "int8"
    image = movement.reshape(ctx, node, src, (outer, k, 1, inner))
    inputs = [
        image,
        ctx.const(f"{node.name}_ones", np.ones((k, 1, inner, 1), np.float32 if acc == "fp32"
                                                else np.int8), weight_type),
        ctx.const(f"{node.name}_bias", np.zeros(inner, np.float32 if acc == "fp32" else np.int64),
                  acc),
        ctx.zero_point(f"{node.name}_input_zp", zp, dtype),
        ctx.zero_point(f"{node.name}_weight_zp", 0, weight_type),
    ]  # fmt: skip
    summed = ctx.temp(node, "prefix", (outer, k, 1, inner), acc)
    ctx.emit("DEPTHWISE_CONV2D", inputs, [summed], node, pad=[k - 1, 0, 0, 0], stride=[1, 1],
             dilation=[1, 1], local_bound=False, acc_type=acc)  # fmt: skip
    return movement.reshape(ctx, node, narrow(summed), shape)


def _by_weights(ctx, node, src: str, axis: int, zp: int, dtype: str, narrow) -> str:
    """The CONV2D form along ``axis``, TRANSPOSEd to the innermost axis and back if needed."""
    shape = movement.shape_of(ctx, src)
    if int(np.prod(shape[axis + 1 :])) == 1:
        return _conv(ctx, node, src, zp, dtype, narrow)
    if shape[axis] <= MAX_DEPTHWISE_AXIS:
        return _depthwise(ctx, node, src, axis, zp, dtype, narrow)
    last = [i for i in range(len(shape)) if i != axis] + [axis]
    summed = _conv(ctx, node, emit.transpose(ctx, node, src, last), zp, dtype, narrow)
    return emit.transpose(ctx, node, summed, layout.inverse(last))


@lowers("aten.cumsum.default")
def visit_cumsum(node: fx.Node, ctx: LoweringContext) -> None:
    x, dim = node.args[:2]
    order = list(dim_order(x))
    axis = order.index(int(dim) % len(order))
    source, x_q, out_q = ctx.tensor(x), ctx.qparams(x), ctx.qparams(node)
    dtype = ctx.graph.tensors[source].dtype
    if dtype == "bool":
        source, dtype = emit.cast(ctx, node, source, "int32"), "int32"
    def narrow(summed: str) -> str:  # the sums in the output's quantization
        if x_q is None:
            return summed
        return emit.rescale(ctx, node, summed, [x_q.tensor_scale / out_q.tensor_scale], in_zp=0,
                            out_zp=out_q.zero_point, out_dtype=out_q.dtype)  # fmt: skip

    if dtype in ACC and movement.shape_of(ctx, source)[axis] <= MAX_CONV_AXIS:
        zp = x_q.zero_point if x_q else 0
        total = _by_weights(ctx, node, source, axis, zp, dtype, narrow)
    elif x_q is None:
        total = _scan(ctx, node, source, axis)
    else:
        wide = emit.rescale(ctx, node, source, [1.0], in_zp=x_q.zero_point, out_zp=0,
                            out_dtype="int32", suffix="wide")  # fmt: skip
        total = narrow(_scan(ctx, node, wide, axis))
    emit.relayout(ctx, node, total, order, torch_shape(node), dim_order(node), True)


OPERATOR = Operator(
    "cumsum -> a 1x1 CONV2D with lower-triangular 0/1 weights, or a running ADD chain",
    quant=REDUCTION,
)
