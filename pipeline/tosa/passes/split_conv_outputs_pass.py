"""A convolution whose output is only read in channel slices becomes one convolution per
slice: the SLICEs go, and each part computes only its own channels.

The fused q/k/v projection of attention (``nn.Linear(dim, 3 * dim)``, then ``reshape(...,
3, heads, head_dim)`` and one slice each for q, k and v) lowers to a 1x1 CONV2D, its
per-channel RESCALE, a RESHAPE to 5-D and three SLICEs of it; Vela copies each 5-D slice in
16 pieces (48 MemoryCopy operations, 17 % of the example transformer block's cycles on
Ethos-U85-256). Each slice picks a contiguous range of the convolution's output channels at
every position, so it is the output of a convolution with those weight rows, bias values and
RESCALE multipliers alone: the same integers, with the same MACs and weights in all, and no
copy (``docs/search.md`` has the cycles).

Applied when the convolution's accumulator is read only by its RESCALE, the RESCALE's output
only by SLICEs of one 5-D RESHAPE of it, none of them a graph output, and each slice is a
contiguous channel range at every position; otherwise the graph is left as it is. Other slices
are left alone: Vela takes those without copies, and splitting them made a GRU keyword
spotter slower (``benchmarks/zoo_cycles.json``).
"""

from __future__ import annotations

import numpy as np

from pipeline.tosa.graph import Operator, TosaGraph


def _const(graph: TosaGraph, name: str) -> np.ndarray:
    return graph.tensors[name].data


def _channel_range(index: np.ndarray, start, size, positions: int, channels: int
                   ) -> tuple[int, int] | None:
    """(first channel, count) when the slice ``start``/``size`` of ``index`` (each element's
    flat NHWC index in the convolution's output) is a contiguous channel range at every
    position, in position-major order; else None."""
    part = index[tuple(slice(int(s), int(s) + int(n)) for s, n in zip(start, size))].reshape(-1)
    if part.size == 0 or part.size % positions:
        return None
    count = part.size // positions
    first = int(part[0])
    if first >= channels or first + count > channels:
        return None
    expected = (np.arange(positions)[:, None] * channels + first + np.arange(count)).reshape(-1)
    return (first, count) if np.array_equal(part, expected) else None


def _split(graph: TosaGraph, conv: Operator) -> bool:
    acc = conv.outputs[0]
    readers = graph.consumers(acc)
    if len(readers) != 1 or readers[0].op != "RESCALE" or graph.is_graph_output(acc):
        return False
    rescale = readers[0]
    y = rescale.outputs[0]
    if graph.is_graph_output(y) or not all(graph.tensors[n].is_const for n in conv.inputs[1:]):
        return False
    readers, reshape, view = graph.consumers(y), None, y
    if len(readers) == 1 and readers[0].op == "RESHAPE":
        reshape, view = readers[0], readers[0].outputs[0]
        readers = graph.consumers(view)
        if graph.is_graph_output(view):
            return False
    if reshape is None or len(graph.tensors[view].shape) < 5:
        # Vela copies slices of a 5-D view in pieces (the q/k/v reshape); other slices it
        # takes without copies, and splitting those (a GRU's gates) made gru_kws 7.5% slower
        # on U55-128 and 2.5% on U85-256 (benchmarks/zoo_cycles.json).
        return False
    if len(readers) < 2 or any(r.op != "SLICE" or r.inputs[0] != view for r in readers):
        return False
    n, h, w, channels = graph.tensors[y].shape
    index = np.arange(n * h * w * channels).reshape(graph.tensors[view].shape)
    ranges = [_channel_range(index, _const(graph, s.inputs[1]), _const(graph, s.inputs[2]),
                             n * h * w, channels) for s in readers]
    if any(r is None for r in ranges):
        return False
    for piece, (first, count) in zip(readers, ranges):
        _emit_part(graph, conv, rescale, piece, first, count)
    for op in (conv, rescale, reshape):
        if op is not None:
            graph.operators.remove(op)
    return True


def _emit_part(graph: TosaGraph, conv: Operator, rescale: Operator, piece: Operator,
               first: int, count: int) -> None:
    """Output channels ``first .. first + count`` of ``conv`` and ``rescale``, in place of the
    SLICE ``piece`` (which becomes the RESHAPE to its own output shape)."""
    channels = slice(first, first + count)
    x, weight, bias, x_zp, w_zp = conv.inputs
    acc_src, out_src = graph.tensors[conv.outputs[0]], graph.tensors[rescale.outputs[0]]
    name = piece.outputs[0]
    weights = graph.add_const(f"{name}_weight", _const(graph, weight)[channels],
                              graph.tensors[weight].dtype)
    biases = graph.add_const(f"{name}_bias", _const(graph, bias)[channels],
                             graph.tensors[bias].dtype)
    acc = graph.add_tensor(f"{name}_acc", (*acc_src.shape[:3], count), acc_src.dtype)
    out = graph.add_tensor(f"{name}_channels", (*out_src.shape[:3], count), out_src.dtype)
    multiplier, shift = (_const(graph, t) for t in rescale.inputs[1:3])
    if rescale.attrs.get("per_channel"):
        multiplier, shift = multiplier[channels], shift[channels]
    scales = [graph.add_const(f"{name}_multiplier", multiplier,
                              graph.tensors[rescale.inputs[1]].dtype),
              graph.add_const(f"{name}_shift", shift, graph.tensors[rescale.inputs[2]].dtype)]
    at = graph.operators.index(piece)
    graph.operators[at:at] = [
        Operator(conv.op, [x, weights, biases, x_zp, w_zp], [acc], dict(conv.attrs),
                 conv.location),
        Operator("RESCALE", [acc, *scales, *rescale.inputs[3:]], [out], dict(rescale.attrs),
                 rescale.location),
    ]
    shape = graph.add_const(f"{name}_shape", list(graph.tensors[name].shape), "shape")
    piece.op, piece.inputs, piece.attrs = "RESHAPE", [out, shape], {}


def run(graph: TosaGraph) -> None:
    from pipeline.tosa.passes import remove_reshape_chains_pass

    before = len(graph.operators)
    graph.rewrite("CONV2D", _split)
    if len(graph.operators) != before:  # each slice's RESHAPE may chain with the next one
        remove_reshape_chains_pass.run(graph)
