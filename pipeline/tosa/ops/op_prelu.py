"""aten.prelu -> int8 TABLE (one slope); per-channel slopes: two scaled copies and a MAXIMUM or
MINIMUM; float: MAXIMUM/MINIMUM/MUL/ADD.

The slopes ``w`` stay float constants (the quantizer leaves them alone) and join the RESCALE
scales, so each path rounds once, like torch's float prelu then quantize:

* int8, one slope: a 256-entry TABLE built with torch's own prelu (exact; Vela fuses it into
  the producing operation);
* every slope in [0, 1] (the usual learned case): ``max(A x, A w x)`` with ``A = s_x / s_out``,
  every slope >= 1 the same with MINIMUM. Rounding is monotonic, so the maximum of the two
  rounded copies is the rounded maximum. int8 makes each copy a 1x1 DEPTHWISE_CONV2D of ones
  with a per-channel output scale (fused by Vela: Ethos-U55 runs per-channel elementwise
  RESCALEs as one MUL per channel slice, 3x the cycles); int16 uses RESCALEs, since an int48
  accumulator's 16-bit multipliers would not be exact;
* otherwise (negative slopes, or slopes on both sides of 1): ``A max(x, 0) + |A w| min(x, 0)``
  times the slopes' signs; one of the two terms is 0, so the ADD does not round.

Per-channel scales apply along TOSA's last dim: a [N, C, L] input is TRANSPOSEd to put C last
and back.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa import layout
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.emit.elementwise import scalar_const
from pipeline.tosa.emit.fp import mul_shift
from pipeline.quant.rules import TABLE
from pipeline.tosa.registry import Operator, lowers


def _table(ctx: LoweringContext, node: fx.Node, slope: torch.Tensor) -> None:
    """int8 -> int8 TABLE of torch's prelu on every input value."""
    x_q, out_q = ctx.qparams(node.args[0]), ctx.qparams(node)
    decomposed = torch.ops.quantized_decomposed
    steps = torch.arange(-128, 128, dtype=torch.int8)
    real = decomposed.dequantize_per_tensor(steps, x_q.tensor_scale, x_q.zero_point,
                                            x_q.qmin, x_q.qmax, torch.int8)  # fmt: skip
    out = decomposed.quantize_per_tensor(torch.nn.functional.prelu(real, slope.float()),
                                         out_q.tensor_scale, out_q.zero_point, out_q.qmin,
                                         out_q.qmax, torch.int8)  # fmt: skip
    table = ctx.const(f"{node.name}_table", out.tolist(), "int8")
    ctx.emit("TABLE", [ctx.tensor(node.args[0]), table], [ctx.define(node)], node)


def _channel_const(ctx, node, values: np.ndarray, rank: int, dtype: str) -> str:
    """``values`` (one per channel = last dim) as a rank-matching broadcast constant."""
    data = values.reshape((1,) * (rank - 1) + (-1,))
    data = data.astype(np.float32 if dtype == "fp32" else np.int32)
    return ctx.const(f"{node.name}_slopes", data, dtype)


def _float(ctx, node, src: str, slopes: np.ndarray, out: str) -> None:
    shape, dtype = ctx.graph.tensors[src].shape, ctx.graph.tensors[src].dtype
    zero = scalar_const(ctx, node, 0.0, dtype)
    parts = [ctx.temp(node, name, shape, dtype) for name in ("positive", "negative", "scaled")]
    ctx.emit("MAXIMUM", [src, zero], [parts[0]], node, nan_mode="PROPAGATE")
    ctx.emit("MINIMUM", [src, zero], [parts[1]], node, nan_mode="PROPAGATE")
    weights = _channel_const(ctx, node, slopes, len(shape), dtype)
    ctx.emit("MUL", [parts[1], weights, mul_shift(ctx, node)], [parts[2]], node)
    ctx.emit("ADD", [parts[0], parts[2]], [out], node)


def _copy(ctx, node, src: str, scales: np.ndarray, suffix: str) -> str:
    """int32 ``round(scales * (x - zp))``: an int8 1x1 DEPTHWISE_CONV2D of ones rescaled into
    the output's int8 quantization and widened without its zero point; int16 one RESCALE."""
    x_q, out_q = ctx.qparams(node.args[0]), ctx.qparams(node)
    scales = np.atleast_1d(scales)
    if x_q.dtype != "int8":
        return emit.rescale(ctx, node, src, list(scales), in_zp=x_q.zero_point, out_zp=0,
                            out_dtype="int32", suffix=suffix)  # fmt: skip
    shape, channels = ctx.graph.tensors[src].shape, ctx.graph.tensors[src].shape[-1]
    image = src
    if len(shape) != 4:
        image = emit.reshape(ctx, node, src, (1, 1, math.prod(shape[:-1]), channels))
    inputs = [
        image,
        ctx.const(f"{node.name}_ones", np.ones((1, 1, channels, 1)), "int8"),
        ctx.const(f"{node.name}_bias", np.zeros(channels), "int32"),
        ctx.zero_point(f"{node.name}_input_zp", x_q.zero_point, "int8"),
        ctx.zero_point(f"{node.name}_weight_zp", 0, "int8"),
    ]
    acc = ctx.temp(node, f"{suffix}_acc", ctx.graph.tensors[image].shape, "int32")
    ctx.emit("DEPTHWISE_CONV2D", inputs, [acc], node, pad=[0, 0, 0, 0], stride=[1, 1],
             dilation=[1, 1], local_bound=False, acc_type="int32")  # fmt: skip
    scales = np.broadcast_to(scales, (channels,))
    copy = emit.rescale(ctx, node, acc, list(scales), in_zp=0, out_zp=out_q.zero_point,
                        out_dtype="int8", suffix=suffix)  # fmt: skip
    wide = emit.rescale(ctx, node, copy, [1.0], in_zp=out_q.zero_point, out_zp=0,
                        out_dtype="int32", suffix=f"{suffix}_wide")  # fmt: skip
    return wide if len(shape) == 4 else emit.reshape(ctx, node, wide, shape)


def _split(ctx, node, src: str, slopes: np.ndarray, gain: float) -> list[str]:
    """``A max(x, 0)`` and ``A w min(x, 0)`` in int32 (the general case)."""
    x_q, shape = ctx.qparams(node.args[0]), ctx.graph.tensors[src].shape
    zero = scalar_const(ctx, node, 0, "int32")
    x = emit.rescale(ctx, node, src, [1.0], in_zp=x_q.zero_point, out_zp=0, out_dtype="int32")
    halves = [ctx.temp(node, half, shape, "int32") for half in ("positive", "negative")]
    ctx.emit("MAXIMUM", [x, zero], [halves[0]], node, nan_mode="PROPAGATE")
    ctx.emit("MINIMUM", [x, zero], [halves[1]], node, nan_mode="PROPAGATE")
    pos, neg = (emit.rescale(ctx, node, h, scales, in_zp=0, out_zp=0, out_dtype="int32")
                for h, scales in zip(halves, ([gain], list(gain * np.abs(slopes)))))  # fmt: skip
    if any(slopes < 0):
        signed = ctx.temp(node, "signed", shape, "int32")
        signs = _channel_const(ctx, node, np.where(slopes < 0, -1, 1), len(shape), "int32")
        ctx.emit("MUL", [neg, signs, mul_shift(ctx, node)], [signed], node)
        neg = signed
    return [pos, neg]


def _integer(ctx, node, src: str, slopes: np.ndarray, out: str) -> None:
    out_q = ctx.qparams(node)
    gain = ctx.qparams(node.args[0]).tensor_scale / out_q.tensor_scale
    select = "MAXIMUM" if all(0 <= slopes) and all(slopes <= 1) else None
    select = "MINIMUM" if all(slopes >= 1) else select
    if select:
        terms = [
            _copy(ctx, node, src, gain, "scaled"),
            _copy(ctx, node, src, gain * slopes, "sloped"),
        ]
    else:
        terms = _split(ctx, node, src, slopes, gain)
    wide = ctx.temp(node, "int32", ctx.graph.tensors[src].shape, "int32")
    if select:
        ctx.emit(select, terms, [wide], node, nan_mode="PROPAGATE")
    else:
        ctx.emit("ADD", terms, [wide], node)
    emit.rescale(ctx, node, wide, [1.0], in_zp=0, out_zp=out_q.zero_point,
                 out_dtype=out_q.dtype, out=out)  # fmt: skip


@lowers("aten.prelu.default")
def visit_prelu(node: fx.Node, ctx: LoweringContext) -> None:
    x, weight = node.args[:2]
    if ctx.const_value(weight) is None:
        raise ctx.unsupported(node, "non-constant weights", "constant weights")
    slope = ctx.const_value(weight).detach()
    slopes = slope.double().reshape(-1).numpy()
    x_q, out_q = ctx.qparams(x), ctx.qparams(node)
    if (x_q is None) != (out_q is None):
        raise ctx.unsupported(node, "a float input or output in a quantized graph")
    uniform = bool(np.all(slopes == slopes[0]))
    if x_q is not None and x_q.dtype == "int8" and uniform:
        _table(ctx, node, slope.reshape(-1)[:1])
        return
    lower = _integer if x_q is not None else _float
    rank = len(torch_shape(x))
    channel = dim_order(x).index(1) if rank > 1 else 0
    if uniform or channel == rank - 1:
        lower(ctx, node, ctx.tensor(x), slopes[:1] if uniform else slopes, ctx.define(node))
        return
    to_last = [i for i in range(rank) if i != channel] + [channel]  # C last, and back
    src = emit.transpose(ctx, node, ctx.tensor(x), to_last)
    result = ctx.temp(node, "channels_last", ctx.graph.tensors[src].shape, ctx.dtype(node))
    lower(ctx, node, src, slopes, result)
    emit.transpose(ctx, node, result, layout.inverse(to_last), ctx.define(node))


OPERATOR = Operator(
    "prelu -> int8 TABLE (one slope); per-channel slopes: scaled copies and a MAXIMUM or MINIMUM",
    quant=TABLE,
)
