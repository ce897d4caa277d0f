"""A convolution with few input channels and a stride along W reads its input as groups of
``stride`` columns: the stride's columns become channels, and the stride along W becomes 1.

The first layer of a network reads 1 (audio features) or 3 (RGB) channels, and the Ethos-U
MAC array works through input channels in groups of 8 or more: most of it idles. A NHWC
tensor ``[N, H, W, C]`` with W a multiple of the stride s is, byte for byte, ``[N, H, W/s,
s*C]``, so a RESHAPE (a view to Vela) gives the convolution s times the channels. Kernel tap
``t`` of output column ``j`` reads input column ``s*j - pad_left + t``, which is channel group
``r`` of column ``j + d`` of the view where ``s*d + r = t - pad_left``; the new kernel holds
each old tap at its (d, r) and zeros elsewhere, and its padding is in whole groups. The
columns the new padding adds are only ever read by zero taps, and a padded column
contributes ``x_zp - x_zp = 0`` as before: the same integers, with some more MACs.

Applied when the weights' zero point is 0 (a zero weight then adds nothing), dilation is 1,
the input has at most ``MAX_CHANNELS`` channels and W is a multiple of the stride; in the
Ethos-U85 variant only. Vela 5.2's cycles (``docs/search.md``): MobileNetV2's first layer (3
channels, 3x3, stride 2) 14,495 -> 10,051 on Ethos-U85-256, ds_cnn's (1 channel, 10x4, stride
2) 6,790 -> 5,563. Ethos-U55-128 gains too (29,643 -> 24,552 and 26,201 -> 21,499) except
with 8 output channels, but Ethos-U65, which compiles the same variant, lost up to 8 %.
"""

from __future__ import annotations

import numpy as np

from pipeline.tosa.graph import Operator, TosaGraph

MAX_CHANNELS = 4


def _zero_point(graph: TosaGraph, name: str) -> int:
    return int(np.asarray(graph.tensors[name].data).reshape(-1)[0])


def _fold(graph: TosaGraph, conv: Operator) -> bool:
    x, weight, bias, x_zp, w_zp = conv.inputs
    n, h, width, channels = graph.tensors[x].shape
    s = conv.attrs["stride"][1]
    if (s < 2 or channels > MAX_CHANNELS or width % s or list(conv.attrs["dilation"]) != [1, 1]
            or not graph.tensors[weight].is_const or _zero_point(graph, w_zp) != 0):
        return False
    old = np.asarray(graph.tensors[weight].data)
    out, kh, kw, _ = old.shape
    top, bottom, left, _ = conv.attrs["pad"]
    first, last = -left // s, (kw - 1 - left) // s  # the column offsets the taps reach
    taps = last - first + 1
    right = graph.tensors[conv.outputs[0]].shape[2] - width // s + first + taps - 1
    if not 0 <= right < taps or -first >= taps:  # padding as wide as the kernel: left alone
        return False
    new = np.zeros((out, kh, taps, s * channels), old.dtype)
    for column in range(taps):
        for group in range(s):
            tap = s * (column + first) + group + left
            if 0 <= tap < kw:
                new[:, :, column, group * channels:(group + 1) * channels] = old[:, :, tap, :]
    view = (n, h, width // s, s * channels)
    name = conv.outputs[0]
    folded = graph.add_tensor(f"{name}_columns", view, graph.tensors[x].dtype)
    shape = graph.add_const(f"{name}_columns_shape", list(view), "shape")
    graph.operators.insert(graph.operators.index(conv),
                           Operator("RESHAPE", [x, shape], [folded], {}, conv.location))
    weights = graph.add_const(f"{name}_columns_weight", new, graph.tensors[weight].dtype)
    conv.inputs = [folded, weights, bias, x_zp, w_zp]
    conv.attrs = dict(conv.attrs, stride=[conv.attrs["stride"][0], 1],
                      pad=[top, bottom, -first, right])
    return True


def run(graph: TosaGraph) -> None:
    from pipeline.tosa.passes import remove_reshape_chains_pass

    folded = [conv for conv in list(graph.operators) if conv.op == "CONV2D" and _fold(graph, conv)]
    if folded:
        graph.remove_unused_tensors()
        remove_reshape_chains_pass.run(graph)  # the view may follow the model's own reshape
