"""aten.conv2d.default -> CONV2D (+ per-channel RESCALE when quantized).

Only ``groups == 1`` for now; depthwise (groups == in_channels) maps to DEPTHWISE_CONV2D with
HWCM weights and grouped convolutions split into per-group CONV2Ds - both get their own
branch in ``_kind``.
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
    _, _, height, width = torch_shape(node.args[0])
    bottom, crop_h = emit.fit_padding(
        height, kernel[0], stride[0], padding[0], padding[0], dilation[0]
    )
    right, crop_w = emit.fit_padding(
        width, kernel[1], stride[1], padding[1], padding[1], dilation[1]
    )
    return Conv2dGeometry(
        stride, (padding[0], bottom, padding[1], right), dilation, (crop_h, crop_w)
    )


@lowers("aten.conv2d.default")
def visit_conv2d(node: fx.Node, ctx: LoweringContext) -> None:
    x, weight = node.args[0], node.args[1]
    bias = node.args[2] if len(node.args) > 2 else None
    groups = int(node.args[6]) if len(node.args) > 6 else 1
    kind = _kind(groups, torch_shape(x)[1])
    if kind != "regular":
        raise ctx.unsupported(node, f"groups={groups} ({kind})", "groups=1")
    if ctx.const_value(weight) is None:
        raise ctx.unsupported(node, "non-constant weights", "constant weights")
    geometry = _geometry(node, tuple(torch_shape(weight)[2:]))
    weight_ohwi = ctx.const_value(weight).detach().permute(0, 2, 3, 1).contiguous().numpy()
    emit_conv2d(
        ctx,
        node,
        ctx.tensor(x),
        ctx.qparams(x),
        weight,
        weight_ohwi,
        bias,
        geometry,
        tosa_shape(node),
        ctx.define(node),
    )
