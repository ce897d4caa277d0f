"""Ethos-U: an integer TRANSPOSE_CONV2D with stride becomes one CONV2D per output phase, and the
phases are interleaved into the output (a different interleave per NPU family).

Vela 5.2 does not fuse the RESCALE after a TRANSPOSE_CONV2D into it: the int32 accumulator
goes to memory and is rescaled by a separate, per-channel elementwise operator, and on
Ethos-U55 an int16 one (int48 accumulator) does not compile at all ("Non-passthrough
operation (Conv2D) could not run on NPU"). Output row ``s * a + b`` of a stride-``s``
transposed convolution only ever meets the kernel taps ``k = (b - out_pad_top) mod s`` (mod
``s``), so each of the ``s_y * s_x`` output phases is an ordinary stride-1 CONV2D of the input
with those taps, reversed - and Vela fuses the RESCALE into a CONV2D. The phases hold every
output once, so the rewrite is exact (same accumulators, same RESCALE).

The phases are CONCATed along channels (Vela writes each convolution straight into its slice)
and the columns are then in place: ``[N, A, A2, s_x * O]`` is ``[N, A, OW, O]`` (all a
conv_transpose1d needs). Rows need moving, and the two NPUs differ in what moves them cheaply
(Vela 5.2, int8 32 -> 16 channels, kernel 4, stride 2, 16x16 -> 32x32; the native
TRANSPOSE_CONV2D takes 89,844 cycles on U55-128 and 72,074 on U85-256):

* U55/U65: one TRANSPOSE swapping the phase rows with the columns, ``[N * A, A2, s_y, .]`` ->
  ``[N * A, s_y, A2, .]``: 47,008 cycles (the U85 form there: 56,224);
* U85: a CONCAT of the row phases along W of ``[N, A, 1, OW * O]`` views: 29,424 cycles
  (the U55 form there: 117,225).

Each phase computes ``ceil(out / stride)`` rows and columns; with an odd output size (kernel
3, stride 2, no output_padding) a SLICE drops the extra last one. Stride 1 is one phase: a
CONV2D with the kernel reversed. Left alone (native): float graphs, and phases whose padding
would be negative or that meet no kernel tap (kernel smaller than the stride).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pipeline.tosa.graph import Operator, TosaGraph


def _phase_axis(size_in: int, rows: int, kernel: int, stride: int, out_pad: int, b: int):
    """(taps reversed, pad before, pad after) giving ``rows`` outputs of phase ``b`` along one
    axis, or None when the phase needs negative padding or meets no tap."""
    rho = (b - out_pad) % stride
    taps = list(range(rho, kernel, stride))[::-1]
    before = len(taps) - 1 - (b - out_pad - rho) // stride
    after = rows + len(taps) - 1 - size_in - before
    if not taps or before < 0 or after < 0:
        return None
    return taps, before, after


def _plan(graph: TosaGraph, conv: Operator) -> tuple[Operator, list] | None:
    """(the RESCALE after ``conv``, [(b_y, b_x, weights, pad)] per phase), or None. Each
    phase has ``ceil(out / stride)`` rows and columns; the extra ones are cropped after."""
    readers = graph.consumers(conv.outputs[0])
    x, acc = graph.tensors[conv.inputs[0]], graph.tensors[conv.outputs[0]]
    if (
        x.dtype not in ("int8", "int16")
        or len(readers) != 1
        or readers[0].op != "RESCALE"
        or graph.is_graph_output(acc.name)
    ):
        return None
    weights = graph.tensors[conv.inputs[1]].data  # [O, KH, KW, I]
    stride, out_pad = conv.attrs["stride"], conv.attrs["out_pad"]
    axes = [(x.shape[i], -(-acc.shape[i] // stride[i - 1]), weights.shape[i], stride[i - 1],
             out_pad[2 * i - 2]) for i in (1, 2)]  # fmt: skip
    phases = []
    for b_y in range(stride[0]):
        for b_x in range(stride[1]):
            rows, cols = _phase_axis(*axes[0], b_y), _phase_axis(*axes[1], b_x)
            if rows is None or cols is None:
                return None
            sub = weights[:, rows[0]][:, :, cols[0]]
            phases.append((b_y, b_x, sub, [rows[1], rows[2], cols[1], cols[2]]))
    return readers[0], phases


def _phase(graph: TosaGraph, conv: Operator, rescale: Operator, b_y: int, b_x: int, weights,
           pad: list[int], out: str | None) -> str:
    """CONV2D of one output phase and a copy of the RESCALE into ``out`` (default: a new
    tensor); returns it."""
    acc, final = graph.tensors[conv.outputs[0]], graph.tensors[rescale.outputs[0]]
    stride = conv.attrs["stride"]
    n, height, width = acc.shape[0], -(-acc.shape[1] // stride[0]), -(-acc.shape[2] // stride[1])
    name = f"{final.name}_phase{b_y}{b_x}"
    phase_acc = graph.add_tensor(f"{name}_acc", (n, height, width, acc.shape[3]), acc.dtype)
    phase_weights = graph.add_const(f"{name}_weights", np.ascontiguousarray(weights),
                                    graph.tensors[conv.inputs[1]].dtype)  # fmt: skip
    attrs = {"pad": pad, "stride": [1, 1], "dilation": [1, 1],
             "local_bound": conv.attrs["local_bound"], "acc_type": conv.attrs["acc_type"]}
    graph.insert_before(rescale, "CONV2D", [conv.inputs[0], phase_weights, *conv.inputs[2:]],
                        phase_acc, **attrs)  # fmt: skip
    out = out or graph.add_tensor(name, (n, height, width, final.shape[3]), final.dtype)
    return graph.insert_before(rescale, "RESCALE", [phase_acc, *rescale.inputs[1:]], out,
                               **rescale.attrs)  # fmt: skip


def _op(graph: TosaGraph, anchor: Operator, op: str, inputs: list[str], shape, **attrs) -> str:
    dtype = graph.tensors[inputs[0]].dtype
    out = graph.add_tensor(f"{anchor.outputs[0]}_{op.lower()}", shape, dtype)
    return graph.insert_before(anchor, op, inputs, out, **attrs)


def _reshape(graph: TosaGraph, anchor: Operator, x: str, shape, out: str | None = None) -> str:
    shape_const = graph.add_const(f"{anchor.outputs[0]}_shape", list(shape), "shape")
    if out is None:
        return _op(graph, anchor, "RESHAPE", [x, shape_const], shape)
    return graph.insert_before(anchor, "RESHAPE", [x, shape_const], out)


def interleave_by_transpose(graph: TosaGraph, anchor: Operator, phases: list[str], stride,
                            out: str) -> None:
    """Ethos-U55/U65: CONCAT all phases along C, TRANSPOSE the phase rows into place."""
    n, a, a2, o = graph.tensors[phases[0]].shape
    joined = _op(graph, anchor, "CONCAT", phases, (n, a, a2, len(phases) * o), axis=3)
    if stride[0] > 1:
        rows = _reshape(graph, anchor, joined, (n * a, a2, stride[0], stride[1] * o))
        joined = _op(graph, anchor, "TRANSPOSE", [rows], (n * a, stride[0], a2, stride[1] * o),
                     perms=[0, 2, 1, 3])  # fmt: skip
    _reshape(graph, anchor, joined, graph.tensors[out].shape, out)


def interleave_by_concat(graph: TosaGraph, anchor: Operator, phases: list[str], stride,
                         out: str) -> None:
    """Ethos-U85: CONCAT each row phase's column phases along C, the rows along W."""
    if stride[0] == 1:  # columns only: the same CONCAT along C
        interleave_by_transpose(graph, anchor, phases, stride, out)
        return
    n, a, a2, o = graph.tensors[phases[0]].shape
    rows = []
    for b_y in range(stride[0]):
        columns = phases[b_y * stride[1] : (b_y + 1) * stride[1]]
        row = _op(graph, anchor, "CONCAT", columns, (n, a, a2, stride[1] * o), axis=3)
        rows.append(_reshape(graph, anchor, row, (n, a, 1, a2 * stride[1] * o)))
    joined = _op(graph, anchor, "CONCAT", rows, (n, a, stride[0], a2 * stride[1] * o), axis=2)
    _reshape(graph, anchor, joined, graph.tensors[out].shape, out)


Interleave = Callable[[TosaGraph, Operator, list[str], list[int], str], None]


def _split(graph: TosaGraph, conv: Operator, interleave: Interleave) -> bool:
    plan = _plan(graph, conv)
    if plan is None:
        return False
    rescale, phases = plan
    out, stride = rescale.outputs[0], list(conv.attrs["stride"])
    if len(phases) == 1:  # stride 1: one CONV2D with the kernel reversed
        _phase(graph, conv, rescale, *phases[0], out)
    else:
        outputs = [_phase(graph, conv, rescale, *phase, None) for phase in phases]
        n, a, a2, c = graph.tensors[outputs[0]].shape
        full = (n, a * stride[0], a2 * stride[1], c)
        shape = graph.tensors[out].shape
        whole = out if full == shape else graph.add_tensor(f"{out}_uncropped", full,
                                                           graph.tensors[out].dtype)  # fmt: skip
        interleave(graph, rescale, outputs, stride, whole)
        if whole != out:  # the phases' extra last row / column
            start = graph.add_const(f"{out}_start", [0, 0, 0, 0], "shape")
            size = graph.add_const(f"{out}_size", list(shape), "shape")
            graph.insert_before(rescale, "SLICE", [whole, start, size], out)
    graph.operators.remove(conv)
    graph.operators.remove(rescale)
    return True


def run_u55(graph: TosaGraph) -> None:
    graph.rewrite("TRANSPOSE_CONV2D", lambda g, op: _split(g, op, interleave_by_transpose))


def run_u85(graph: TosaGraph) -> None:
    graph.rewrite("TRANSPOSE_CONV2D", lambda g, op: _split(g, op, interleave_by_concat))
