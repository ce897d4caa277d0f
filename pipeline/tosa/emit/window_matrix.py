"""Averages over windows that differ in size and overlap, as one constant matrix product:
torch's adaptive pooling when the output does not divide the input (``7x7 -> 10x10``).

Each output cell ``(i, j)`` averages the input rows ``[h0_i, h1_i)`` and columns
``[w0_j, w1_j)``. The NHWC input is TRANSPOSEd to ``[N, C, H, W]`` and seen as
``[1, 1, N * C, H * W]``; a 1x1 CONV2D with 0/1 weights ``[OH * OW, 1, 1, H * W]`` (one row
per cell: which input pixels it covers) sums every window exactly in the accumulator, and the
per-output-channel RESCALE - one channel per cell - divides each sum by its own window size
and quantizes: one rounding per output, like torch's float average then quantize. Float
graphs carry ``1 / size`` in the weights instead. The cells are TRANSPOSEd back to NHWC.
Every Ethos-U runs this (int8 and int16 CONV2D, TRANSPOSE of rank 4); its weights are
``H * W * OH * OW`` bytes, so ``MAX_WEIGHTS`` bounds them.
"""

from __future__ import annotations

import numpy as np
from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext
from pipeline.tosa.emit.conv import ACC_TYPES

MAX_WEIGHTS = 1 << 20  # int8 weight bytes of the window matrix


def window_matrix(rows, columns, in_hw) -> np.ndarray:
    """0/1 ``[len(rows) * len(columns), H * W]``: which input pixels each cell's window covers
    (``rows``/``columns``: ``[start, end)`` windows along H and W)."""

    def along(windows, size):
        covered = np.zeros((len(windows), size), dtype=np.int8)
        for i, (start, end) in enumerate(windows):
            covered[i, start:end] = 1
        return covered

    return np.kron(along(rows, in_hw[0]), along(columns, in_hw[1]))


def window_average(ctx: LoweringContext, node: fx.Node, rows, columns, out: str) -> None:
    """Average of NHWC ``node.args[0]`` over every (row window, column window) into NHWC
    ``out``, quantized as ``node`` (the node's own tensor, or the input's qparams' temp)."""
    x = node.args[0]
    src = ctx.tensor(x)
    n, h, w, c = ctx.graph.tensors[src].shape
    matrix = window_matrix(rows, columns, (h, w))
    cells, sizes = matrix.shape[0], matrix.sum(axis=1, dtype=np.int64)
    channels_first = emit.transpose(ctx, node, src, [0, 3, 1, 2])
    view = emit.reshape(ctx, node, channels_first, (1, 1, n * c, h * w))
    x_q, out_q = ctx.qparams(x), ctx.qparams(node)
    dtype = x_q.dtype if x_q else ctx.graph.tensors[src].dtype
    acc_type = ACC_TYPES[dtype]
    weights = matrix.reshape(cells, 1, 1, h * w)
    if x_q is None:
        weights = (weights / sizes.reshape(cells, 1, 1, 1)).astype(np.float32)
    inputs = [
        view,
        ctx.const(f"{node.name}_windows", weights, "int8" if x_q else dtype),
        ctx.const(f"{node.name}_bias", np.zeros(cells), acc_type),
        ctx.zero_point(f"{node.name}_input_zp", x_q.zero_point if x_q else 0, dtype),
        ctx.zero_point(f"{node.name}_weight_zp", 0, "int8" if x_q else dtype),
    ]
    summed = ctx.temp(node, "window_sums", (1, 1, n * c, cells), acc_type)
    attrs = {"pad": [0, 0, 0, 0], "stride": [1, 1], "dilation": [1, 1], "local_bound": False}
    ctx.emit("CONV2D", inputs, [summed], node, acc_type=acc_type, **attrs)
    if x_q is not None:
        summed = emit.rescale(
            ctx, node, summed, list(x_q.tensor_scale / (sizes * out_q.tensor_scale)),
            in_zp=0, out_zp=out_q.zero_point, out_dtype=out_q.dtype,
        )  # fmt: skip
    cells_view = emit.reshape(ctx, node, summed, (n, c, len(rows), len(columns)))
    emit.transpose(ctx, node, cells_view, [0, 2, 3, 1], out=out)
