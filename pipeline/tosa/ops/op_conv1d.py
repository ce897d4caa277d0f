"""aten.conv1d (``padding`` as a number, or ``"same"`` / ``"valid"``) -> the conv2d lowering
over an image one row high: CONV2D, DEPTHWISE_CONV2D or one CONV2D per group (``conv.py``).

A [N, C, L] value keeps torch's order in TOSA, so the input is TRANSPOSEd to [N, L, C] and
viewed as NHWC [N, 1, L, C]; the result goes back the same way. The rank-3 TRANSPOSE matters:
Vela fuses a rank-4 NHWC -> NCHW one into the convolution's output writes, which made a
conv1d ~10x slower on Ethos-U85 (17k instead of 1.7k cycles for 16 -> 32 channels, L = 64).
Between two conv1d layers the TRANSPOSE pair cancels (``fuse_transposes_pass``). Weights
[O, I/groups, K] become [O, I/groups, 1, K]; stride, dilation and padding apply along W.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa import layout
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.emit.conv import conv_geometry, emit_conv
from pipeline.tosa.ops.op_conv2d import conv_arguments
from pipeline.quant.rules import weighted
from pipeline.tosa.registry import Operator, lowers


def _single(value) -> int:
    return int(value[0]) if isinstance(value, (list, tuple)) else int(value)


def image_shape(node: fx.Node) -> tuple[int, int, int, int]:
    """NHWC [N, 1, L, C] of a conv1d operand ([N, C, L], or unbatched [C, L])."""
    shape = torch_shape(node)
    n, c, length = (1, *shape) if len(shape) == 2 else shape
    return n, 1, length, c


def to_image(ctx: LoweringContext, node: fx.Node, x: fx.Node) -> str:
    """``x`` ([.., C, L] in torch's order) as an NHWC image [N, 1, L, C]."""
    if not layout.is_identity(dim_order(x)):
        nchw = layout.permute(image_shape(x), layout.inverse(layout.NHWC))
        return emit.relayout(ctx, node, ctx.tensor(x), dim_order(x), nchw, layout.NHWC)
    rank = len(torch_shape(x))
    swapped = emit.transpose(ctx, node, ctx.tensor(x), (*range(rank - 2), rank - 1, rank - 2))
    return emit.reshape(ctx, node, swapped, image_shape(x))


def from_image(ctx: LoweringContext, node: fx.Node, image: str) -> None:
    """Define ``node``'s output ([.., C, L]) from its NHWC image [N, 1, L, C]."""
    if not layout.is_identity(dim_order(node)):
        emit.relayout(ctx, node, image, layout.NHWC, torch_shape(node), dim_order(node), True)
        return
    *outer, c, length = torch_shape(node)
    rows = emit.reshape(ctx, node, image, (*outer, length, c))
    rank = len(outer) + 2
    emit.transpose(ctx, node, rows, (*range(rank - 2), rank - 1, rank - 2), ctx.define(node))


@lowers("aten.conv1d.default", "aten.conv1d.padding")
def visit_conv1d(node: fx.Node, ctx: LoweringContext) -> None:
    x, weight, bias, stride, padding, dilation, groups = conv_arguments(node)
    if ctx.const_value(weight) is None:
        raise ctx.unsupported(node, "non-constant weights", "constant weights")
    value = ctx.const_value(weight).detach().unsqueeze(2)
    geometry = conv_geometry(
        (1, torch_shape(x)[-1]),
        tuple(value.shape[2:]),
        (1, _single(stride)),
        padding if isinstance(padding, str) else (0, _single(padding)),
        (1, _single(dilation)),
        node.meta.get("extra_pad", (0, 0, 0, 0)),
    )
    out = ctx.temp(node, "conv", image_shape(node), ctx.dtype(node))
    emit_conv(ctx, node, to_image(ctx, node, x), weight, value, bias, geometry, groups, out)
    from_image(ctx, node, out)


OPERATOR = Operator(
    "conv1d -> the conv2d lowering on a height-1 image",
    quant=weighted(),
)
