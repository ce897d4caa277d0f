"""CONV2D / DEPTHWISE_CONV2D emission shared by the convolution-like visitors (conv2d,
linear as a 1x1 conv).

Integer convolution accumulates ``sum((x - x_zp) * w) + bias`` in int32 (int8 activations)
or int48 (int16 activations) in units of ``x_scale * w_scale[c]``, then a per-channel
RESCALE moves the accumulator to the output's quantization. CONV2D takes OHWI weights,
DEPTHWISE_CONV2D takes HWCM ones (output channel ``c * M + m``, the order torch uses for
``groups == in_channels``), so the same per-output-channel scales apply to both.

int48 accumulators are rescaled with 16-bit multipliers (TOSA forbids scale32 on int48):
relative scale error up to 2**-16, i.e. up to ~0.5 LSB at int16 magnitudes, so int16 outputs
often differ by 1 from torch's float reference. An exact alternative (narrow int48 -> int32 by
a power of two, then a scale32 RESCALE) was measured and rejected: Vela cannot fuse the
second RESCALE after a residual ADD (a ResNet block on U55-128: 11 NPU ops and 236k cycles
instead of 7 ops and 26k cycles).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.context import LoweringContext
from pipeline.tosa.quant_math import QParams

ACC_TYPES = {"int8": "int32", "int16": "int48", "fp32": "fp32"}
_BIAS_RTOL = 1e-6


@dataclass(frozen=True)
class Conv2dGeometry:
    stride: tuple[int, int] = (1, 1)
    pad: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, bottom, left, right
    dilation: tuple[int, int] = (1, 1)
    crop: tuple[int, int] = (0, 0)  # trailing input rows/cols torch's floor division ignores


def _bias_values(
    ctx: LoweringContext, bias: fx.Node | None, out_channels: int, acc_scales: np.ndarray | None
) -> np.ndarray:
    """Bias in accumulator units; re-expressed if the quantizer chose another bias scale."""
    if bias is None:
        return np.zeros(out_channels, dtype=np.int64 if acc_scales is not None else np.float32)
    value = (
        ctx.const_value(bias)
        .detach()
        .to(torch.float64 if acc_scales is not None else torch.float32)
        .numpy()
    )
    if acc_scales is None:
        return value
    bias_q = ctx.qparams(bias)
    if bias_q is None:  # a float bias next to integer weights: quantize it here
        return np.round(value / acc_scales).astype(np.int64)
    bias_scales = np.broadcast_to(np.asarray(bias_q.scale, dtype=np.float64), value.shape)
    if np.allclose(bias_scales, acc_scales, rtol=_BIAS_RTOL, atol=0):
        return value.astype(np.int64)
    return np.round(value * bias_scales / acc_scales).astype(np.int64)


def emit_conv2d(
    ctx: LoweringContext,
    node: fx.Node,
    x: str,
    x_q: QParams | None,
    weight: fx.Node,
    weights: np.ndarray,
    bias: fx.Node | None,
    geometry: Conv2dGeometry,
    out_shape: tuple[int, ...],
    out: str,
    op: str = "CONV2D",
    channels: slice = slice(None),
) -> None:
    """``op`` (CONV2D with OHWI weights, DEPTHWISE_CONV2D with HWCM weights) of TOSA tensor
    ``x`` (NHWC) into ``out``; RESCALE to ``node``'s qparams if int. ``channels``: which
    output channels of ``weight``/``bias`` (their scales and values) ``weights`` holds - one
    group of a grouped convolution."""
    out_channels = int(ctx.const_value(weight).shape[0])
    x = emit.crop_trailing(ctx, node, x, (0, *geometry.crop, 0))
    attrs = {
        "pad": list(geometry.pad),
        "stride": list(geometry.stride),
        "dilation": list(geometry.dilation),
        "local_bound": False,
    }
    if x_q is None:
        inputs = [
            x,
            ctx.const(f"{node.name}_weight", weights.astype(np.float32), "fp32"),
            ctx.const(
                f"{node.name}_bias", _bias_values(ctx, bias, out_channels, None)[channels], "fp32"
            ),
            ctx.zero_point(f"{node.name}_input_zp", 0, "fp32"),
            ctx.zero_point(f"{node.name}_weight_zp", 0, "fp32"),
        ]
        ctx.emit(op, inputs, [out], node, acc_type="fp32", **attrs)
        return
    w_q, out_q = ctx.qparams(weight), ctx.qparams(node)
    if w_q is None or out_q is None:
        raise ctx.unsupported(
            node,
            "quantized input but float weights or output",
            "input, weights and output all quantized",
        )
    acc_dtype = ACC_TYPES[x_q.dtype]
    w_scales = np.broadcast_to(np.asarray(w_q.scale, dtype=np.float64), (out_channels,))
    acc_scales = x_q.tensor_scale * w_scales
    bias_values = _bias_values(ctx, bias, out_channels, acc_scales)[channels]
    acc_scales = acc_scales[channels]
    inputs = [
        x,
        ctx.const(f"{node.name}_weight", weights, w_q.dtype),
        ctx.const(
            f"{node.name}_bias",
            bias_values,
            "int48" if acc_dtype == "int48" else "int32",
        ),
        ctx.zero_point(f"{node.name}_input_zp", x_q.zero_point, x_q.dtype),
        ctx.zero_point(f"{node.name}_weight_zp", w_q.zero_point, w_q.dtype),
    ]
    acc = ctx.temp(node, "acc", out_shape, acc_dtype)
    ctx.emit(op, inputs, [acc], node, acc_type=acc_dtype, **attrs)
    emit.rescale(
        ctx,
        node,
        acc,
        list(acc_scales / out_q.tensor_scale),
        in_zp=0,
        out_zp=out_q.zero_point,
        out_dtype=out_q.dtype,
        out=out,
    )
