"""aten.conv2d.default -> CONV2D or DEPTHWISE_CONV2D (+ per-channel RESCALE when quantized).

``groups == 1`` is a CONV2D with OHWI weights; ``groups == in_channels`` (depthwise, depth
multiplier M = out / in) a DEPTHWISE_CONV2D with HWCM weights. Other group counts split into
one CONV2D per group on a channel SLICE of the input, joined by a CONCAT of the groups'
outputs (all rescaled to the node's one quantization, so the CONCAT moves data only).

Padding is torch's symmetric ``padding`` plus any ``meta["extra_pad"]`` (top, bottom, left,
right) that ``fold_pad_pass`` moved here from a preceding constant-zero ``aten.pad``.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.context import LoweringContext, torch_shape, tosa_shape
from pipeline.tosa.conv import Conv2dGeometry, emit_conv2d
from pipeline.tosa.registry import lowers


def _pair(value) -> tuple[int, int]:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return (int(values[0]), int(values[-1]))


def _kind(groups: int, in_channels: int) -> str:
    if groups == 1:
        return "regular"
    return "depthwise" if groups == in_channels else "grouped"


def _geometry(node: fx.Node, kernel: tuple[int, int]) -> Conv2dGeometry:
    args = list(node.args) + [None] * (7 - len(node.args))
    stride, padding, dilation = (
        _pair(a) if a is not None else d for a, d in zip(args[3:6], ((1, 1), (0, 0), (1, 1)))
    )
    top, bottom, left, right = node.meta.get("extra_pad", (0, 0, 0, 0))
    top, bottom, left, right = (
        top + padding[0],
        bottom + padding[0],
        left + padding[1],
        right + padding[1],
    )
    _, _, height, width = torch_shape(node.args[0])
    bottom, crop_h = emit.fit_padding(height, kernel[0], stride[0], top, bottom, dilation[0])
    right, crop_w = emit.fit_padding(width, kernel[1], stride[1], left, right, dilation[1])
    return Conv2dGeometry(stride, (top, bottom, left, right), dilation, (crop_h, crop_w))


@lowers("aten.conv2d.default")
def visit_conv2d(node: fx.Node, ctx: LoweringContext) -> None:
    x, weight = node.args[0], node.args[1]
    bias = node.args[2] if len(node.args) > 2 else None
    groups = int(node.args[6]) if len(node.args) > 6 else 1
    in_channels = torch_shape(x)[1]
    kind = _kind(groups, in_channels)
    if ctx.const_value(weight) is None:
        raise ctx.unsupported(node, "non-constant weights", "constant weights")
    geometry = _geometry(node, tuple(torch_shape(weight)[2:]))
    value = ctx.const_value(weight).detach()
    if kind == "grouped":
        _grouped(node, ctx, groups, geometry)
        return
    if kind == "regular":
        op, weights = "CONV2D", value.permute(0, 2, 3, 1)
    else:  # torch [C*M, 1, kh, kw], output channel c*M + m -> TOSA [kh, kw, C, M]
        out_channels, _, kh, kw = value.shape
        multiplier = out_channels // in_channels
        weights = value.reshape(in_channels, multiplier, kh, kw).permute(2, 3, 0, 1)
        op = "DEPTHWISE_CONV2D"
    emit_conv2d(
        ctx,
        node,
        ctx.tensor(x),
        ctx.qparams(x),
        weight,
        weights.contiguous().numpy(),
        bias,
        geometry,
        tosa_shape(node),
        ctx.define(node),
        op,
    )


def _grouped(node: fx.Node, ctx: LoweringContext, groups: int, geometry: Conv2dGeometry) -> None:
    x, weight = node.args[0], node.args[1]
    bias = node.args[2] if len(node.args) > 2 else None
    n, h, w, cin = ctx.graph.tensors[ctx.tensor(x)].shape
    value = ctx.const_value(weight).detach()
    cin_g, cout_g = cin // groups, value.shape[0] // groups
    out_shape = tosa_shape(node)
    parts = []
    for g in range(groups):
        part_in = ctx.temp(node, f"group{g}_in", (n, h, w, cin_g), ctx.dtype(x))
        slice_inputs = [
            ctx.tensor(x),
            ctx.const(f"{node.name}_start", [0, 0, 0, g * cin_g], "shape"),
            ctx.const(f"{node.name}_size", [n, h, w, cin_g], "shape"),
        ]
        ctx.emit("SLICE", slice_inputs, [part_in], node)
        channels = slice(g * cout_g, (g + 1) * cout_g)
        part_shape = (*out_shape[:3], cout_g)
        part = ctx.temp(node, f"group{g}", part_shape, ctx.dtype(node))
        weights = value[channels].permute(0, 2, 3, 1).contiguous().numpy()
        emit_conv2d(
            ctx, node, part_in, ctx.qparams(x), weight, weights, bias, geometry,
            part_shape, part, "CONV2D", channels,
        )  # fmt: skip
        parts.append(part)
    ctx.emit("CONCAT", parts, [ctx.define(node)], node, axis=3)
