"""Kernel/stride/pad attributes shared by the 2-D pooling visitors."""

from __future__ import annotations

from torch import fx

from pipeline.fx import pair
from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext


def pool_geometry(in_hw, kernel, stride, padding, out_hw=None) -> tuple[dict, tuple[int, int]]:
    """(``kernel``/``stride``/``pad`` attributes, trailing (rows, cols) to crop off the input),
    fitted to TOSA's exact-division rule (see ``emit.fit_padding``). ``out_hw``: the output
    size torch computed, when it is not the floor rule's: with ``ceil_mode`` the last window
    may hang over the input, so the bottom/right padding grows to reach it.

    A kernel covering the whole (unpadded) input gets stride 1: the output is 1x1 for any
    stride, and Ethos-U55 only accepts pooling strides 1..3.
    """
    kernel, stride, padding = pair(kernel), pair(stride), pair(padding)
    if padding == (0, 0) and kernel == tuple(int(d) for d in in_hw):
        stride = (1, 1)
    if out_hw is None:
        bottom, crop_h = emit.fit_padding(in_hw[0], kernel[0], stride[0], padding[0], padding[0])
        right, crop_w = emit.fit_padding(in_hw[1], kernel[1], stride[1], padding[1], padding[1])
    else:
        bottom, crop_h = _reach(in_hw[0], kernel[0], stride[0], padding[0], out_hw[0])
        right, crop_w = _reach(in_hw[1], kernel[1], stride[1], padding[1], out_hw[1])
    attrs = {
        "kernel": list(kernel),
        "stride": list(stride),
        "pad": [padding[0], bottom, padding[1], right],
    }
    return attrs, (crop_h, crop_w)


def _reach(size: int, kernel: int, stride: int, before: int, out: int) -> tuple[int, int]:
    """(after padding, trailing elements to crop) giving exactly ``out`` windows."""
    after = (out - 1) * stride + kernel - size - before
    return max(after, 0), max(-after, 0)


def pool_input(ctx: LoweringContext, node: fx.Node, crop: tuple[int, int]) -> str:
    """The pooled node's NHWC input tensor, cropped if the stride leaves rows unused."""
    return emit.crop_trailing(ctx, node, ctx.tensor(node.args[0]), (0, *crop, 0))
