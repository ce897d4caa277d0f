"""Division by a tensor and the Scalar forms of add/sub, written out before quantization (and
for float programs alike, ``pipeline/normalise``) in operators the lowering has.

TOSA integer profiles have no division of real values. ``a / b`` becomes ``a * (1 / b)``:
the reciprocal is an int8/int16 TABLE with its own observed qparams, then a MUL - the form
torch's quantized graph then computes too, so each of the two layers verifies against it
exactly (the reference backend does the same). The rounding modes round that quotient
(floor/trunc TABLEs), and ``remainder``/``fmod`` subtract ``b`` times it. Division by a
number is not rewritten (``x / 4`` folds into a RESCALE, ``x // 0.5`` is one TABLE), nor is
division of integer tensors (``ids // 4``: integer arithmetic, ``pipeline/tosa/functions/int_math.py``).
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _float_divisor(b) -> bool:
    return isinstance(b, torch.Tensor) and b.dtype.is_floating_point


def div(a, b):
    if not _float_divisor(b):
        return NotImplemented  # a number, or integers: the operator stays as it is
    return a * torch.reciprocal(b)


_ROUND = {"floor": torch.floor, "trunc": torch.trunc, None: lambda q: q}


def div_mode(a, b, rounding_mode=None):
    if not _float_divisor(b):
        return NotImplemented
    return _ROUND[rounding_mode](a * torch.reciprocal(b))


def remainder(a, b):
    """``a - b * floor(a / b)`` (the sign of ``b``, like Python's ``%``)."""
    if not _float_divisor(b):
        return NotImplemented
    return a - b * torch.floor(a * torch.reciprocal(b))


def fmod(a, b):
    """``a - b * trunc(a / b)`` (the sign of ``a``, like C's ``fmod``)."""
    if not _float_divisor(b):
        return NotImplemented
    return a - b * torch.trunc(a * torch.reciprocal(b))


def add_scalar(a, other, alpha=1):
    return aten.add.Tensor(a, other, alpha=alpha)


def sub_scalar(a, other, alpha=1):
    return aten.sub.Tensor(a, other, alpha=alpha)


DECOMPOSITIONS = {
    aten.div.Tensor: div,
    aten.div.Tensor_mode: div_mode,
    aten.remainder.Tensor: remainder,
    aten.fmod.Tensor: fmod,
    aten.add.Scalar: add_scalar,
    aten.sub.Scalar: sub_scalar,
}
