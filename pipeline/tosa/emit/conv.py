"""CONV2D / DEPTHWISE_CONV2D emission shared by the convolution-like visitors (conv2d, conv1d,
linear as a 1x1 conv; TRANSPOSE_CONV2D through ``emit_weighted``).

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

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import fx

from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.emit import common as emit
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


def conv_geometry(
    in_hw, kernel, stride, padding, dilation, extra_pad=(0, 0, 0, 0)
) -> Conv2dGeometry:
    """TOSA geometry of a torch convolution over ``in_hw``: ``padding`` is a (rows, cols)
    pair or torch's ``"same"`` / ``"valid"``; ``extra_pad`` (top, bottom, left, right) comes
    from a folded explicit pad. Trailing rows the stride never reaches are cropped."""
    if padding == "valid":
        padding = (0, 0)
    if padding == "same":  # torch: total d*(k-1), the odd one after
        totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
        pads = [(t // 2, t - t // 2) for t in totals]
    else:
        pads = [(p, p) for p in padding]
    top, bottom, left, right = (
        a + b for a, b in zip(extra_pad, (*pads[0], *pads[1]))
    )
    bottom, crop_h = emit.fit_padding(in_hw[0], kernel[0], stride[0], top, bottom, dilation[0])
    right, crop_w = emit.fit_padding(in_hw[1], kernel[1], stride[1], left, right, dilation[1])
    return Conv2dGeometry(
        tuple(stride), (top, bottom, left, right), tuple(dilation), (crop_h, crop_w)
    )


def _live_taps(size: int, kernel: int, stride: int, before: int, dilation: int,
               outputs: int) -> tuple[int, int]:
    """The first and last kernel taps along one axis that read the input (not padding) for
    at least one of ``outputs`` output positions; ``(0, -1)`` when none does."""
    live = [k for k in range(kernel)
            if any(0 <= o * stride - before + k * dilation < size for o in range(outputs))]
    return (live[0], live[-1]) if live else (0, -1)


def drop_padding_taps(value: torch.Tensor, geometry: Conv2dGeometry, in_hw
                      ) -> tuple[torch.Tensor, Conv2dGeometry]:
    """The same convolution without the kernel rows and columns that only ever read padding.

    A tap that reads padding for every output adds ``(x_zp - x_zp) * w = 0`` (float: ``0 * w``),
    so dropping it and taking as much off the padding on its side changes no output bit: the
    output size, the other taps' reads, the bias and the scales stay as they were. A dilated
    3x3 convolution whose dilation reaches past its input map (DeepLabV3's ASPP: dilation 12,
    24, 36 on an 8x8 map) becomes a 1x1 convolution of its centre tap. Only whole leading or
    trailing rows/columns go (the live taps are a contiguous range), and only where the
    leading padding left stays >= 0; trailing input rows that no output reads any more (a
    stride's remainder) are cropped, as ``conv_geometry`` crops them.

    Args:
        value: OIHW weights.
        geometry: the TOSA geometry of the convolution (``conv_geometry``).
        in_hw: the input's (height, width) before ``geometry.crop``.
    """
    pads, dilation, kernel = list(geometry.pad), list(geometry.dilation), list(value.shape[2:])
    crop = list(geometry.crop)
    for axis in range(2):
        size = in_hw[axis] - geometry.crop[axis]
        before, after = pads[2 * axis], pads[2 * axis + 1]
        d, k, s = dilation[axis], kernel[axis], geometry.stride[axis]
        outputs = (size + before + after - d * (k - 1) - 1) // s + 1
        first, last = _live_taps(size, k, s, before, d, outputs)
        if last < first or (first, last) == (0, k - 1):
            continue  # nothing to drop (or no tap ever reads data: kept as it is)
        new_before, new_after = before - first * d, after - (k - 1 - last) * d
        if new_before < 0 or size + min(new_after, 0) < 1:
            continue
        value = value.narrow(2 + axis, first, last - first + 1)
        pads[2 * axis], pads[2 * axis + 1] = new_before, max(new_after, 0)
        crop[axis] += max(-new_after, 0)  # trailing input rows no output reads any more
        kernel[axis] = last - first + 1
        if kernel[axis] == 1:
            dilation[axis] = 1
    if tuple(pads) == geometry.pad and tuple(crop) == geometry.crop:
        return value, geometry
    return value, Conv2dGeometry(geometry.stride, tuple(pads), tuple(dilation), tuple(crop))


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
    x = emit.crop_trailing(ctx, node, x, (0, *geometry.crop, 0))
    attrs = {
        "pad": list(geometry.pad),
        "stride": list(geometry.stride),
        "dilation": list(geometry.dilation),
        "local_bound": False,
    }
    out_channels = int(ctx.const_value(weight).shape[0])
    emit_weighted(ctx, node, op, x, x_q, weight, weights, bias, attrs, out_channels, out_shape,
                  out, channels)  # fmt: skip


def emit_weighted(
    ctx: LoweringContext,
    node: fx.Node,
    op: str,
    x: str,
    x_q: QParams | None,
    weight: fx.Node,
    weights: np.ndarray,
    bias: fx.Node | None,
    attrs: dict,
    out_channels: int,
    out_shape: tuple[int, ...],
    out: str,
    channels: slice = slice(None),
) -> None:
    """``op`` (any of TOSA's weighted convolutions, with ``attrs``) into ``out``: the float
    operator, or the integer one and a per-output-channel RESCALE to ``node``'s qparams.
    ``weight``'s scales are per output channel (``out_channels`` of them) or per tensor."""
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


def emit_conv(
    ctx: LoweringContext,
    node: fx.Node,
    x: str,
    weight: fx.Node,
    value: torch.Tensor,
    bias: fx.Node | None,
    geometry: Conv2dGeometry,
    groups: int,
    out: str,
) -> None:
    """A torch convolution with OIHW weights ``value`` (the value of ``weight``, maybe
    reshaped) of NHWC ``x`` into ``out`` (NHWC): ``groups == 1`` a CONV2D with OHWI weights;
    ``groups == in_channels`` (depthwise, multiplier M = out / in) a DEPTHWISE_CONV2D with
    HWCM weights; other group counts one CONV2D per group on a channel SLICE of the input,
    joined by a CONCAT (all rescaled to the node's one quantization: it moves data only)."""
    x_q, out_shape = ctx.qparams(node.args[0]), ctx.graph.tensors[out].shape
    in_channels = ctx.graph.tensors[x].shape[3]
    if groups == 1:
        op, weights = "CONV2D", value.permute(0, 2, 3, 1)
    elif groups == in_channels:  # [C*M, 1, kh, kw], output channel c*M + m -> [kh, kw, C, M]
        out_channels, _, kh, kw = value.shape
        weights = value.reshape(in_channels, out_channels // in_channels, kh, kw)
        op, weights = "DEPTHWISE_CONV2D", weights.permute(2, 3, 0, 1)
    else:
        _emit_grouped(ctx, node, x, weight, value, bias, geometry, groups, out)
        return
    emit_conv2d(ctx, node, x, x_q, weight, weights.contiguous().numpy(), bias, geometry,
                out_shape, out, op)  # fmt: skip


def _emit_grouped(ctx, node, x, weight, value, bias, geometry, groups, out) -> None:
    n, h, w, cin = ctx.graph.tensors[x].shape
    cin_g, cout_g = cin // groups, value.shape[0] // groups
    out_shape = ctx.graph.tensors[out].shape
    parts = []
    for g in range(groups):
        part_in = ctx.temp(node, f"group{g}_in", (n, h, w, cin_g), ctx.graph.tensors[x].dtype)
        slice_inputs = [
            x,
            ctx.const(f"{node.name}_start", [0, 0, 0, g * cin_g], "shape"),
            ctx.const(f"{node.name}_size", [n, h, w, cin_g], "shape"),
        ]
        ctx.emit("SLICE", slice_inputs, [part_in], node)
        channels = slice(g * cout_g, (g + 1) * cout_g)
        part_shape = (*out_shape[:3], cout_g)
        part = ctx.temp(node, f"group{g}", part_shape, ctx.graph.tensors[out].dtype)
        weights = value[channels].permute(0, 2, 3, 1).contiguous().numpy()
        emit_conv2d(
            ctx, node, part_in, ctx.qparams(node.args[0]), weight, weights, bias, geometry,
            part_shape, part, "CONV2D", channels,
        )  # fmt: skip
        parts.append(part)
    ctx.emit("CONCAT", parts, [out], node, axis=3)


def weighted_product(
    node: fx.Node, ctx: LoweringContext, x: fx.Node, weight: fx.Node, bias: fx.Node | None
) -> None:
    """``x @ weight (+ bias)`` with a constant [in, out] ``weight`` as a 1x1 CONV2D."""
    in_features, out_features = torch_shape(weight)
    if bias is not None and (ctx.const_value(bias) is None or torch_shape(bias) != (out_features,)):
        raise ctx.unsupported(node, "this bias", f"a constant bias of shape [{out_features}]")
    rows = math.prod(torch_shape(x)[:-1])
    shape = (rows, 1, 1, out_features)
    as_image = emit.relayout(
        ctx, node, ctx.tensor(x), dim_order(x), (rows, 1, 1, in_features), (0, 1, 2, 3)
    )
    linear_weight = _linear_weight(ctx, weight)
    weight_ohwi = ctx.const_value(linear_weight).reshape(out_features, 1, 1, in_features)
    conv_out = ctx.temp(node, "conv", shape, ctx.dtype(node))
    emit_conv2d(
        ctx, node, as_image, ctx.qparams(x), linear_weight, weight_ohwi.numpy(), bias,
        Conv2dGeometry(), shape, conv_out,
    )  # fmt: skip
    emit.relayout(ctx, node, conv_out, (0, 1, 2, 3), torch_shape(node), dim_order(node), True)


def _linear_weight(ctx: LoweringContext, weight: fx.Node) -> fx.Node:
    """``weight`` [in, out] as linear's [out, in] weight with the same quantization, which
    applies per output feature either way: a node outside the graph, read by emit_conv2d."""
    linear = fx.Graph().placeholder(f"{weight.name}_t")
    linear.meta["const"] = ctx.const_value(weight).detach().t().contiguous()
    if ctx.qparams(weight) is not None:
        linear.meta["qparams"] = ctx.qparams(weight)
    return linear
