"""Rewrite composite operators into ones the quantizer annotates, before quantization.

softmax and layer_norm have no single integer TOSA operator; written out in primitives
(mean, sub, mul, exp/reciprocal/rsqrt), every intermediate gets its own observed qparams and
each primitive lowers to an Ethos-U operator (AVG_POOL2D, ADD/SUB/MUL, int8 TABLE). unbind
becomes one select per output, since its tuple output cannot carry a quantization.
"""

from __future__ import annotations

import torch
from torch.export import ExportedProgram

aten = torch.ops.aten


def softmax(x: torch.Tensor, dim: int, half_to_float: bool = False) -> torch.Tensor:
    """exp(x - max) / sum, the sum as ``count * mean`` (mean lowers to AVG_POOL2D)."""
    e = torch.exp(x - torch.amax(x, dim, keepdim=True))
    return e * torch.reciprocal(e.mean(dim, keepdim=True) * e.shape[dim])


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


DECOMPOSITIONS = {
    aten.softmax.int: softmax,
    aten.layer_norm.default: layer_norm,
    aten.unbind.int: unbind,
}


def decompose(program: ExportedProgram) -> ExportedProgram:
    """``program`` with the composite operators above written out (a new program)."""
    targets = {n.target for n in program.graph.nodes if n.op == "call_function"}
    if not targets & set(DECOMPOSITIONS):
        return program
    return program.run_decompositions(DECOMPOSITIONS)
