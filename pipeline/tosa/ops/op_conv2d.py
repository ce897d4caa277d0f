"""aten.conv2d (``padding`` as numbers, or ``"same"`` / ``"valid"``) -> CONV2D or
DEPTHWISE_CONV2D (+ per-channel RESCALE when quantized); see ``conv.emit_conv``.

``groups == 1`` is a CONV2D with OHWI weights; ``groups == in_channels`` (depthwise, depth
multiplier M = out / in) a DEPTHWISE_CONV2D with HWCM weights. Other group counts split into
one CONV2D per group on a channel SLICE of the input, joined by a CONCAT of the groups'
outputs (all rescaled to the node's one quantization, so the CONCAT moves data only).
Dilation is TOSA's own. Kernel rows and columns that only ever read padding are dropped
(``conv.drop_padding_taps``: exact; a dilation reaching past the map leaves a 1x1
convolution of the centre tap).

Padding is torch's ``padding`` plus any ``meta["extra_pad"]`` (top, bottom, left, right) that
``fold_pad_pass`` moved here from a preceding constant-zero ``aten.pad``.
"""

from __future__ import annotations

from torch import fx

from pipeline.fx import pair
from pipeline.quant.rules import weighted
from pipeline.tosa.context import LoweringContext, torch_shape
from pipeline.tosa.emit.conv import conv_geometry, drop_padding_taps, emit_conv
from pipeline.tosa.registry import U55_U65, Operator, lowers


def conv_arguments(node: fx.Node) -> tuple:
    """(x, weight, bias, stride, padding, dilation, groups) of an aten.conv1d/conv2d node,
    defaults filled in; ``padding`` stays a string for the ``.padding`` overloads."""
    args = list(node.args) + [None] * (7 - len(node.args))
    x, weight, bias, stride, padding, dilation, groups = args[:7]
    return x, weight, bias, stride or 1, 0 if padding is None else padding, dilation or 1, (
        int(groups) if groups is not None else 1
    )


@lowers("aten.conv2d.default", "aten.conv2d.padding")
def visit_conv2d(node: fx.Node, ctx: LoweringContext) -> None:
    x, weight, bias, stride, padding, dilation, groups = conv_arguments(node)
    if ctx.const_value(weight) is None:
        raise ctx.unsupported(node, "non-constant weights", "constant weights")
    value = ctx.const_value(weight).detach()
    geometry = conv_geometry(
        torch_shape(x)[2:],
        tuple(value.shape[2:]),
        pair(stride),
        padding if isinstance(padding, str) else pair(padding),
        pair(dilation),
        node.meta.get("extra_pad", (0, 0, 0, 0)),
    )
    value, geometry = drop_padding_taps(value, geometry, torch_shape(x)[2:])
    emit_conv(ctx, node, ctx.tensor(x), weight, value, bias, geometry, groups, ctx.define(node))


def u55_large_stride(op) -> tuple[str, str] | None:
    """Vela 5.2 runs no padded CONV2D and no DEPTHWISE_CONV2D at all with a stride over 3 on
    Ethos-U55/U65 (measured); their variant borders the input and makes the depthwise one a
    CONV2D (pad_strided_conv_pass)."""
    stride, pad = op.attrs.get("stride", [1, 1]), op.attrs.get("pad", [0, 0, 0, 0])
    if op.op == "DEPTHWISE_CONV2D" and max(stride) > 3:
        return "have strides of at most 3", f"stride {stride}"
    if op.op == "CONV2D" and max(stride) > 3 and any(pad):
        return "pad nothing when a stride is over 3", f"stride {stride} with pad {pad}"
    return None


OPERATOR = Operator(
    "conv2d -> CONV2D or DEPTHWISE_CONV2D (+ per-channel RESCALE), grouped as SLICEs and a CONCAT",
    quant=weighted(),
    npu={U55_U65: {"CONV2D": u55_large_stride, "DEPTHWISE_CONV2D": u55_large_stride}},
)
