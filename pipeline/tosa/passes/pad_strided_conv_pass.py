"""Ethos-U55/U65: a convolution with a stride over 3 is a CONV2D without padding.

Vela 5.2 runs CONV2D and DEPTHWISE_CONV2D with any stride on Ethos-U55/U65 only when they do
not pad ('Non-passthrough operation (Conv2D) could not run on NPU' for a (2, 4) kernel at
stride (2, 4) with padding 1, or (3, 3) at stride (4, 1) with padding 1; the same ones
without padding, and (5, 5) or (7, 7) at stride 4, compile - measured). TOSA convolutions pad
with the input zero point, so the input bordered by that many rows and columns of the zero
point and the convolution without padding give the same integers. The border is a CONCAT of
constant blocks: Vela folds an explicit PAD back into the convolution's padding and fails
again. Vela runs no DEPTHWISE_CONV2D with a stride over 3 there at all, padded or not (also
measured): it becomes a CONV2D whose weights are zero between channels, the same sums.
"""

from __future__ import annotations

import numpy as np

from pipeline.tosa.graph import TosaGraph

MAX_PADDED_STRIDE = 3
_CONVS = ("CONV2D", "DEPTHWISE_CONV2D")


def _border(graph: TosaGraph, op, x: str, axis: int, before: int, after: int, value) -> str:
    """``x`` with ``before``/``after`` rows of ``value`` along ``axis`` (a CONCAT of constant
    blocks: Vela folds an explicit PAD back into the convolution)."""
    if not before and not after:
        return x
    source = graph.tensors[x]
    parts = []
    for count in (before, after):
        if count:
            shape = list(source.shape)
            shape[axis] = count
            parts.append(graph.add_const(f"{x}_border", np.full(shape, value), source.dtype))
        else:
            parts.append(None)
    inputs = [p for p in (parts[0], x, parts[1]) if p is not None]
    shape = list(source.shape)
    shape[axis] += before + after
    out = graph.add_tensor(f"{x}_bordered", shape, source.dtype)
    return graph.insert_before(op, "CONCAT", inputs, out, axis=axis)


def _as_conv(graph: TosaGraph, op) -> None:
    """DEPTHWISE_CONV2D (weights ``[KH, KW, C, M]``, output channel ``c * M + m``) as CONV2D
    (weights ``[C * M, KH, KW, C]``, zero off its own input channel)."""
    weights = graph.tensors[op.inputs[1]]
    kh, kw, channels, multiplier = weights.shape
    dense = np.zeros((channels * multiplier, kh, kw, channels), dtype=weights.data.dtype)
    for c in range(channels):
        dense[c * multiplier : (c + 1) * multiplier, :, :, c] = weights.data[:, :, c, :].transpose(
            2, 0, 1
        )
    op.op = "CONV2D"
    op.inputs[1] = graph.add_const(f"{op.inputs[1]}_dense", dense, weights.dtype)


def run(graph: TosaGraph) -> None:
    for op in list(graph.operators):
        if op.op == "DEPTHWISE_CONV2D" and max(op.attrs["stride"]) > MAX_PADDED_STRIDE:
            _as_conv(graph, op)
        pad = op.attrs.get("pad", [0, 0, 0, 0])
        if op.op not in _CONVS or max(op.attrs["stride"]) <= MAX_PADDED_STRIDE or not any(pad):
            continue
        value = int(graph.tensors[op.inputs[3]].data.reshape(-1)[0])
        top, bottom, left, right = pad
        x = _border(graph, op, op.inputs[0], 1, top, bottom, value)
        op.inputs[0] = _border(graph, op, x, 2, left, right, value)
        op.attrs["pad"] = [0, 0, 0, 0]
    graph.remove_unused_tensors()
