"""Reductions and clamps with no TOSA operator of their own, written out before quantization
(and for float programs alike) in operators that quantize and lower well:

- ``var`` / ``std`` (``torch.var``, ``x.std(dim)``, any ``correction``): the mean of the
  squared deviations from the mean, times ``n / (n - correction)`` - the form layer_norm
  already uses (each intermediate observed on its own; ``std`` is this and a ``sqrt``);
- ``clamp(x, min=t, max=u)`` by tensors: ``clamp_min`` then ``clamp_max`` (MAXIMUM, MINIMUM
  of operands sharing one quantization: exact), which is torch's order - a bound ``min``
  above ``max`` gives ``max``, as torch does;
- ``any`` / ``all`` of a number tensor: of ``x != 0`` (a bool tensor, which REDUCE_ANY /
  REDUCE_ALL take; ``pipeline/tosa/ops/op_any_all.py``).
"""

from __future__ import annotations

import math

import torch

aten = torch.ops.aten


def _dims(x: torch.Tensor, dim) -> list[int]:
    if dim is None or (isinstance(dim, (list, tuple)) and not dim):
        return list(range(x.dim()))
    return sorted({d % x.dim() for d in ([dim] if isinstance(dim, int) else dim)})


def var(x: torch.Tensor, dim=None, *, correction=None, keepdim: bool = False) -> torch.Tensor:
    dims = _dims(x, dim)
    count = math.prod(x.shape[d] for d in dims)
    correction = 1 if correction is None else correction
    centered = x - x.mean(dims, keepdim=True)
    variance = (centered * centered).mean(dims, keepdim=keepdim)
    if count == correction:
        return variance * math.inf  # torch: the sum over no degrees of freedom
    return variance * (count / (count - correction))


def clamp_tensor(x: torch.Tensor, min=None, max=None) -> torch.Tensor:
    if min is not None:
        x = torch.clamp_min(x, min)
    if max is not None:
        x = torch.clamp_max(x, max)
    return x


def _of_bools(reduction):
    def decomposed(x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        if x.dtype == torch.bool:
            return NotImplemented  # one REDUCE_ANY / REDUCE_ALL
        return reduction(x != 0, *args, **kwargs)

    return decomposed


DECOMPOSITIONS = {
    aten.var.correction: var,
    aten.clamp.Tensor: clamp_tensor,
    **{op: _of_bools(op) for op in (aten.any.default, aten.any.dim, aten.any.dims)},
    **{op: _of_bools(op) for op in (aten.all.default, aten.all.dim, aten.all.dims)},
}
