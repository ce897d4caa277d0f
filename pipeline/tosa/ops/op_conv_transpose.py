"""aten.conv_transpose1d / conv_transpose2d -> TRANSPOSE_CONV2D (+ per-channel RESCALE when
quantized); conv_transpose1d over an image one row high, like conv1d (``op_conv1d.py``).

TOSA places input pixel (y, x) at output (y * stride + out_pad_top + ky, ...) with weights
[O, KH, KW, I] - torch's [I, O / groups, KH, KW] permuted, never flipped. torch's ``padding``
crops the output on both sides and ``output_padding`` extends it after, so TOSA's out_pad is
(-padding, output_padding - padding) per axis (TOSA allows negative out_pad above -kernel).
Dilation spreads the kernel with zero taps; groups become one block-diagonal weight (zeros
across groups): exact, and one operator for Vela instead of a SLICE/CONCAT per group.
The quantizer gives the weight one scale per column (axis 1), which output channel
``g * O/groups + j`` uses. The NPU variants of the graph hold one CONV2D per output phase
instead (``split_transpose_conv_pass``: Vela fuses no RESCALE into a TRANSPOSE_CONV2D).
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import fx

from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.conv import emit_weighted
from pipeline.tosa.ops.op_conv1d import from_image, image_shape, to_image
from pipeline.fx import pair
from pipeline.quant.rules import weighted
from pipeline.tosa.registry import Operator, U55_U65, lowers

_DEFAULTS = (None, None, None, 1, 0, 0, 1, 1)


def _arguments(node: fx.Node, one_d: bool) -> tuple:
    """(x, weight, bias, stride, padding, output_padding, groups, dilation), each spatial one
    as an (H, W) pair (H = 1, no padding for conv_transpose1d)."""
    args = list(node.args) + list(_DEFAULTS[len(node.args) :])
    x, weight, bias, *spatial = (d if a is None else a for a, d in zip(args, _DEFAULTS))
    stride, padding, output_padding, groups, dilation = spatial
    pairs = [pair(v) for v in (stride, padding, output_padding, dilation)]
    if one_d:
        pairs = [(1, p[1]) if i in (0, 3) else (0, p[1]) for i, p in enumerate(pairs)]
    return x, weight, bias, *pairs[:3], int(groups), pairs[3]


def dense_weights(value: torch.Tensor, groups: int, dilation) -> torch.Tensor:
    """torch's [I, O/groups, KH, KW] as TOSA's [O, KH', KW', I]: dilated with zero taps,
    groups block-diagonal."""
    cin, cout_g, kh, kw = value.shape
    dh, dw = dilation
    spread = value.new_zeros((cin, cout_g, dh * (kh - 1) + 1, dw * (kw - 1) + 1))
    spread[:, :, ::dh, ::dw] = value
    cin_g = cin // groups
    dense = value.new_zeros((cout_g * groups, *spread.shape[2:], cin))
    for g in range(groups):
        block = spread[g * cin_g : (g + 1) * cin_g].permute(1, 2, 3, 0)
        dense[g * cout_g : (g + 1) * cout_g, ..., g * cin_g : (g + 1) * cin_g] = block
    return dense


def _output_channel_weight(ctx: LoweringContext, weight: fx.Node, groups: int) -> fx.Node:
    """``weight`` with its column scales repeated per group (one per output channel): a node
    outside the graph, read by emit_weighted."""
    q = ctx.qparams(weight)
    if groups == 1 or q is None or len(q.scale) == 1:
        return weight
    proxy = fx.Graph().placeholder(f"{weight.name}_per_output")
    proxy.meta["const"] = ctx.const_value(weight)
    proxy.meta["qparams"] = replace(q, scale=tuple(q.scale) * groups, axis=0)
    return proxy


@lowers("aten.conv_transpose1d.default", "aten.conv_transpose2d.input")
def visit_conv_transpose(node: fx.Node, ctx: LoweringContext) -> None:
    one_d = str(node.target) == "aten.conv_transpose1d.default"
    x, weight, bias, stride, padding, output_padding, groups, dilation = _arguments(node, one_d)
    if ctx.const_value(weight) is None:
        raise ctx.unsupported(node, "non-constant weights", "constant weights")
    value = ctx.const_value(weight).detach()
    weights = dense_weights(value.unsqueeze(2) if one_d else value, groups, dilation)
    kernel = weights.shape[1:3]
    out_pad = [-padding[0], output_padding[0] - padding[0]]
    out_pad += [-padding[1], output_padding[1] - padding[1]]
    if any(p <= -k for p, k in zip(out_pad, (kernel[0], kernel[0], kernel[1], kernel[1]))):
        raise ctx.unsupported(
            node, f"padding {padding} of kernel {tuple(kernel)}", "padding below the kernel size"
        )
    attrs = {"out_pad": out_pad, "stride": list(stride), "local_bound": False}
    if one_d:
        src, out_shape = to_image(ctx, node, x), image_shape(node)
        out = ctx.temp(node, "conv", out_shape, ctx.dtype(node))
    else:
        src, out_shape, out = ctx.tensor(x), tosa_shape(node), ctx.define(node)
    emit_weighted(
        ctx, node, "TRANSPOSE_CONV2D", src, ctx.qparams(x),
        _output_channel_weight(ctx, weight, groups), weights.contiguous().numpy(), bias,
        attrs, weights.shape[0], out_shape, out,
    )  # fmt: skip
    if one_d:
        from_image(ctx, node, out)


def u55_transpose_conv(op) -> tuple[str, str] | None:
    """The U55/U65 variant splits strided and int16 ones into CONV2Ds
    (split_transpose_conv_pass); these are the ones it could not."""
    if op.inputs[0].dtype != "int8":  # Vela 5.2 fuses no RESCALE into it: int48 stays
        return "take int8 input (Vela 5.2 cannot rescale its int48 accumulator)", op.inputs[0].dtype
    stride, (_, height, width, _) = op.attrs.get("stride", [1, 1]), op.inputs[0].shape
    kernel = op.inputs[1].shape[1:3]
    allowed = stride in ([1, 1], [2, 2]) or (stride == [1, 2] and height == kernel[0] == 1)
    if not allowed and not (stride == [2, 1] and width == kernel[1] == 1):
        return "have stride 1x1, 2x2, or 2 along a one-pixel axis", f"stride {stride}"
    return None


OPERATOR = Operator(
    "conv_transpose1d / conv_transpose2d -> TRANSPOSE_CONV2D (+ per-channel RESCALE)",
    quant=weighted(transposed=True),
    npu={U55_U65: {"TRANSPOSE_CONV2D": u55_transpose_conv}},
)
