"""Rewrite composite operators into ones the quantizer annotates and the lowering has visitors
for: before quantization (``flow.py``), and for float programs in the lowering driver
(``pipeline/tosa/lowering.py``, FP profile), so both profiles lower the same primitives.

softmax and layer_norm have no single integer TOSA operator; written out in primitives
(mean, sub, mul, exp/reciprocal/rsqrt/log), every intermediate gets its own observed qparams
and each primitive lowers to an Ethos-U operator (AVG_POOL2D, ADD/SUB/MUL, int8 TABLE).
unbind, chunk and split become one select or slice per output, since a tuple output cannot
carry a quantization.
"""

from __future__ import annotations

import torch
from torch.export import ExportedProgram

from pipeline.normalise import (
    attention,
    conv3d,
    division,
    norms,
    padding,
    recurrent,
    reductions,
    scatter,
)

aten = torch.ops.aten


def softmax(x: torch.Tensor, dim: int, half_to_float: bool = False) -> torch.Tensor:
    """exp(x - max) / sum, the sum as ``count * mean`` (mean lowers to AVG_POOL2D)."""
    e = torch.exp(x - torch.amax(x, dim, keepdim=True))
    return e * torch.reciprocal(e.mean(dim, keepdim=True) * e.shape[dim])


def log_softmax(x: torch.Tensor, dim: int, half_to_float: bool = False) -> torch.Tensor:
    """(x - max) - log(sum(exp(x - max))), the sum as ``count * mean`` like softmax."""
    shifted = x - torch.amax(x, dim, keepdim=True)
    return shifted - torch.log(torch.exp(shifted).mean(dim, keepdim=True) * x.shape[dim])


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    dims = list(range(-len(normalized_shape), 0))
    centered = x - x.mean(dims, keepdim=True)
    variance = (centered * centered).mean(dims, keepdim=True)
    y = centered * torch.rsqrt(variance + eps)
    if weight is not None:
        y = y * weight
    return y + bias if bias is not None else y


def unbind(x: torch.Tensor, dim: int = 0) -> list[torch.Tensor]:
    return [torch.select(x, dim, i) for i in range(x.shape[dim])]


def split_with_sizes(x: torch.Tensor, sizes: list[int], dim: int = 0) -> list[torch.Tensor]:
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [torch.narrow(x, dim, start, size) for start, size in zip(starts, sizes)]


def split(x: torch.Tensor, size: int, dim: int = 0) -> list[torch.Tensor]:
    length = x.shape[dim]
    return split_with_sizes(x, [min(size, length - s) for s in range(0, length, size)], dim)


def chunk(x: torch.Tensor, chunks: int, dim: int = 0) -> list[torch.Tensor]:
    return split(x, -(-x.shape[dim] // chunks), dim)  # torch.chunk's ceil-sized pieces


DECOMPOSITIONS = {
    aten.softmax.int: softmax,
    aten.layer_norm.default: layer_norm,
    aten.unbind.int: unbind,
    aten.log_softmax.int: log_softmax,
    aten.split.Tensor: split,
    aten.split_with_sizes.default: split_with_sizes,
    aten.chunk.default: chunk,
    aten.split_copy.Tensor: split,
    aten.split_with_sizes_copy.default: split_with_sizes,
    aten.unbind_copy.int: unbind,
    # Attention and recurrent layers: their own modules (how each is quantized lives there).
    aten.scaled_dot_product_attention.default: attention.scaled_dot_product_attention,
    aten.lstm.input: recurrent.lstm,
    aten.gru.input: recurrent.gru,
    aten.group_norm.default: norms.group_norm,
    aten.instance_norm.default: norms.instance_norm,
    # Division by a tensor, add/sub.Scalar: pipeline/normalise/division.py.
    **division.DECOMPOSITIONS,
    # conv3d as one conv2d over stacked depth taps: pipeline/normalise/conv3d.py.
    **conv3d.DECOMPOSITIONS,
    # pad modes reflect / replicate / circular as slices and a concat: padding.py.
    **padding.DECOMPOSITIONS,
    # var/std and clamp by tensors: reductions.py.
    **reductions.DECOMPOSITIONS,
    # index_put with accumulate=True as a one-hot product: scatter.py.
    **scatter.DECOMPOSITIONS,
}


def decompose(program: ExportedProgram) -> ExportedProgram:
    """``program`` with the composite operators above written out (a new program)."""
    targets = {n.target for n in program.graph.nodes if n.op == "call_function"}
    if not targets & set(DECOMPOSITIONS):
        return program
    from pipeline.programs import memoize_cia_materialization

    memoize_cia_materialization()
    return program.run_decompositions(DECOMPOSITIONS)
