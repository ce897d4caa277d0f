"""Quantization parameters and the integer requantization math TOSA's RESCALE expects.

RESCALE computes, per element (TOSA 1.0 ``apply_scale_32`` / ``apply_scale_16``)::

    out = clamp(((in - in_zp) * multiplier + round) >> shift) + out_zp, out_type range)

with ``round = 1 << (shift - 1)`` (SINGLE_ROUND: round half up on the exact product), plus
``sign * (1 << 30)`` when DOUBLE_ROUND and ``shift > 31`` (TFLite's double rounding).
A float scale ``s`` is therefore encoded as ``multiplier * 2**-shift`` with a 31-bit (scale32)
or 15-bit (scale16) normalized multiplier: ``s = m * 2**e`` with ``0.5 <= m < 1`` (frexp),
``multiplier = round_half_up(m * 2**31)``, ``shift = 31 - e``. The relative error of the
encoded scale is below ``2**-31`` (scale32), far under the float32 error of torch's reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_SHIFT, MAX_SHIFT = 2, 62  # TOSA: REQUIRE(2 <= shift <= 62)

DTYPE_RANGES = {
    "int8": (-128, 127),
    "int16": (-32768, 32767),
    "int32": (-(2**31), 2**31 - 1),
    "int48": (-(2**47), 2**47 - 1),
}


@dataclass(frozen=True)
class QParams:
    """How an integer tensor maps to real values: ``real = (q - zero_point) * scale``.

    ``scale`` has one entry per tensor, or one per channel along ``axis``.
    """

    scale: tuple[float, ...]
    zero_point: int
    dtype: str  # "int8", "int16", "int32"
    qmin: int
    qmax: int
    axis: int | None = None

    @property
    def per_channel(self) -> bool:
        return self.axis is not None

    @property
    def tensor_scale(self) -> float:
        if len(self.scale) != 1:
            raise ValueError(f"per-channel qparams (axis {self.axis}) have no single scale")
        return self.scale[0]

    def quantize(self, real: float) -> int:
        """``real`` quantized like torch does (round half to even), clamped to [qmin, qmax]."""
        steps = max(-(2.0**40), min(2.0**40, real / self.tensor_scale))
        return max(self.qmin, min(self.qmax, round(steps) + self.zero_point))


def encode_scale(scale: float, bits: int = 32) -> tuple[int, int]:
    """``(multiplier, shift)`` with ``multiplier * 2**-shift ~= scale`` (see module docstring).

    Raises:
        ValueError: scale is negative, not finite, or too large to encode (>= 2**(bits-1-2)).
    """
    if not math.isfinite(scale) or scale < 0:
        raise ValueError(f"rescale scale must be a finite number >= 0; got {scale}")
    if scale == 0:
        return 0, MAX_SHIFT  # the reference model bounds the input by the shift: any fits
    mantissa, exponent = math.frexp(scale)
    one = 1 << (bits - 1)
    multiplier = math.floor(mantissa * one + 0.5)  # exact: mantissa * 2**31 fits a float64
    if multiplier == one:  # mantissa rounded up to 1.0
        multiplier, exponent = multiplier // 2, exponent + 1
    shift = bits - 1 - exponent
    while shift > MAX_SHIFT:  # tiny scales: give up low multiplier bits, keep the shift legal
        multiplier, shift = (multiplier + 1) >> 1, shift - 1
    if shift < MIN_SHIFT:
        limit = 2.0 ** (bits - 1 - MIN_SHIFT)
        raise ValueError(f"rescale scale must be below {limit}; got {scale}")
    return multiplier, shift


def apply_scale(
    value: np.ndarray, multiplier: int, shift: int, double_round: bool = False
) -> np.ndarray:
    """TOSA ``apply_scale_32`` in numpy (int64), for tests and documentation."""
    value = np.asarray(value, dtype=np.int64)
    rounding = np.full(value.shape, 1 << (shift - 1), dtype=np.int64)
    if double_round and shift > 31:
        rounding += np.where(value >= 0, 1 << 30, -(1 << 30))
    return (value * multiplier + rounding) >> shift
