"""Exact qparams for a constant operand (``x + torch.ones(n)``, ``torch.eye(n) + x``,
``x * torch.arange(n)``, ``x + torch.scalar_tensor(2.0)``, a buffer, an integer constant made
float by ``pipeline/normalise/promotion.py``).

Its values are known when the program is quantized. When every value lies on one grid that
the integer type spans - the grid of their greatest common divisor (for ``eye``, ``ones``,
``full``, ``arange``, small integers, dyadic fractions: 1, 0.25, 4096...), 0 included - its
qparams are computed, not observed, and the constant is quantized exactly, in torch's q/dq
graph and in the TOSA graph (an observer's range rarely lands on that grid: ``arange(10)``
at 9/255 per step is off by up to 0.018). Any other constant (learned embeddings, folded
BatchNorm vectors) is observed as the scheme says: its error-minimising range.
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


def exact_spec(value: torch.Tensor, spec: QuantizationSpec):
    """Fixed qparams of ``spec``'s type that represent the constant ``value`` exactly (torch's
    quantize -> dequantize gives every value back), or None when its values lie on no grid
    the type spans."""
    if not bool(torch.isfinite(value).all()):
        return None
    values = value.detach().double()
    low, high = min(float(values.min()), 0.0), max(float(values.max()), 0.0)
    symmetric = spec.qscheme in (torch.per_tensor_symmetric, torch.per_channel_symmetric)
    steps = min(-spec.quant_min, spec.quant_max) if symmetric else spec.quant_max - spec.quant_min
    span = max(-low, high) if symmetric else high - low
    grid = _grid(values, steps)
    if grid is None or span / grid > steps:
        return None
    scale, zero_point = _affine(low, _f32(grid), spec)
    if not _is_exact(values, scale, zero_point, spec):
        return None
    return FixedQParamsQuantizationSpec(
        spec.dtype, scale, zero_point, spec.quant_min, spec.quant_max, spec.qscheme
    )


def operand_spec(node, spec: QuantizationSpec):
    """Exact fixed qparams for a constant operand that has them, else ``spec`` (observed)."""
    value = constant_value(node)
    exact = None if value is None else exact_spec(value, spec)
    return spec if exact is None else exact


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
