"""Exact qparams for a constant operand (``x + torch.ones(n)``, ``torch.eye(n) + x``,
``x * torch.arange(n)``, ``x + torch.scalar_tensor(2.0)``, a buffer, an integer constant made
float by ``pipeline/normalise/promotion.py``).

Its values are known when the program is quantized, so they need no observer: the qparams
are computed from them. When every value lies on one grid that the integer type spans - the
grid of their greatest common divisor (for ``eye``/``ones``/``arange``/small integers and
dyadic fractions that is 1, 0.25, ...), 0 included - the constant is quantized exactly, in
torch's q/dq graph and in the TOSA graph; otherwise its min/max (0 included, never clipped),
within half a step.
"""

from __future__ import annotations

import math
from fractions import Fraction

import torch
from torch import fx
from torchao.quantization.pt2e.quantizer import (
    FixedQParamsQuantizationSpec,
    QuantizationSpec,
)


def constant_value(node) -> torch.Tensor | None:
    """The float tensor a ``get_attr`` node holds (None for anything else)."""
    if not isinstance(node, fx.Node) or node.op != "get_attr":
        return None
    value = node.graph.owning_module
    for part in str(node.target).split("."):
        value = getattr(value, part, None)
    is_float = isinstance(value, torch.Tensor) and value.dtype.is_floating_point
    return value if is_float and value.numel() > 0 else None


def _grid(values: torch.Tensor, steps: int) -> float | None:
    """The greatest common divisor of the values, or None when more than ``steps`` of it lie
    between them and 0 (or they have more distinct values than that)."""
    distinct = torch.unique(values).tolist()
    if len(distinct) > steps + 1:
        return None
    fractions = [Fraction(v) for v in distinct if v != 0]
    if not fractions:
        return 1.0
    denominator = math.lcm(*(f.denominator for f in fractions))
    divisor = math.gcd(*(int(f * denominator) for f in fractions))
    grid = Fraction(divisor, denominator)
    largest = max(abs(f) for f in fractions)
    return float(grid) if largest / grid <= steps else None


def _is_exact(values: torch.Tensor, scale: float, zero_point: int, spec) -> bool:
    """Whether torch's quantize -> dequantize of ``values`` gives them back bit for bit."""
    args = (scale, zero_point, spec.quant_min, spec.quant_max, spec.dtype)
    ops = torch.ops.quantized_decomposed
    codes = ops.quantize_per_tensor.default(values.float(), *args)
    return torch.equal(ops.dequantize_per_tensor.default(codes, *args), values.float())


def _f32(x: float) -> float:
    return float(torch.tensor(x, dtype=torch.float32))


def _affine(low: float, scale: float, spec: QuantizationSpec) -> tuple[float, int]:
    """(scale, zero point) whose range starts at ``low`` (<= 0) with ``scale``."""
    if spec.qscheme in (torch.per_tensor_symmetric, torch.per_channel_symmetric):
        return scale, 0
    zero_point = spec.quant_min - round(low / scale)
    return scale, min(max(zero_point, spec.quant_min), spec.quant_max)


def exact_spec(value: torch.Tensor, spec: QuantizationSpec) -> FixedQParamsQuantizationSpec:
    """Fixed qparams of ``spec``'s type for the constant ``value``: exact when its values lie
    on one grid the type spans, else its min/max with 0 included."""
    finite = torch.nan_to_num(value.detach().double(), posinf=0.0, neginf=0.0)
    low, high = min(float(finite.min()), 0.0), max(float(finite.max()), 0.0)
    symmetric = spec.qscheme in (torch.per_tensor_symmetric, torch.per_channel_symmetric)
    steps = min(-spec.quant_min, spec.quant_max) if symmetric else spec.quant_max - spec.quant_min
    span = max(-low, high) if symmetric else high - low
    minmax = _affine(low, _f32(span / steps if span > 0 else 1.0), spec)
    grid = _grid(finite, steps)
    exact = None if grid is None or span / grid > steps else _affine(low, _f32(grid), spec)
    if exact is not None and _is_exact(finite, *exact, spec):
        scale, zero_point = exact
    else:
        scale, zero_point = minmax
    return FixedQParamsQuantizationSpec(
        spec.dtype, scale, zero_point, spec.quant_min, spec.quant_max, spec.qscheme
    )


def operand_spec(node, spec: QuantizationSpec):
    """``spec`` for an operand computed at run time, the exact fixed qparams for a constant."""
    value = constant_value(node)
    return spec if value is None else exact_spec(value, spec)


def integer_codes(source: torch.dtype, spec: QuantizationSpec):
    """Fixed qparams (scale 1, zero point 0) under which the integers of ``source`` are their
    own codes - an int8 tensor made float under int8 activations, int8 or int16 under int16
    ones - exact, and no RESCALE in the graph; None when ``spec``'s type cannot hold them."""
    if source.is_floating_point or source == torch.bool:
        return None
    info, codes = torch.iinfo(source), torch.iinfo(spec.dtype)
    if info.min < codes.min or info.max > codes.max:
        return None
    # the type's whole range: int16's -32768 too, which symmetric activations leave out
    return FixedQParamsQuantizationSpec(
        spec.dtype, 1.0, 0, codes.min, codes.max, spec.qscheme
    )
