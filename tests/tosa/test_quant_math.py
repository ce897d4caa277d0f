import math

import numpy as np
import pytest

from pipeline.tosa.quant_math import QParams, apply_scale, encode_scale


@pytest.mark.parametrize("scale", [1.0, 0.5, 2.0**19, 0.0123456, 3.3e-5, 1e-12, 0.999999999])
def test_encoded_scale_is_within_2_pow_minus_31(scale):
    multiplier, shift = encode_scale(scale)
    assert 2 <= shift <= 62
    assert 0 <= multiplier < 2**31
    if shift < 62:
        assert multiplier >= 2**30  # normalized: full 31-bit precision
        assert abs(multiplier * 2.0**-shift / scale - 1) <= 2.0**-31


def test_power_of_two_scales_are_exact():
    assert encode_scale(1.0) == (2**30, 30)
    assert encode_scale(2.0**19) == (2**30, 11)


def test_scale16():
    multiplier, shift = encode_scale(0.3, bits=16)
    assert 2**14 <= multiplier < 2**15
    assert abs(multiplier * 2.0**-shift / 0.3 - 1) <= 2.0**-15


@pytest.mark.parametrize("scale", [-1.0, math.inf, 2.0**30])
def test_unencodable_scales(scale):
    with pytest.raises(ValueError, match="rescale scale must be"):
        encode_scale(scale)


def test_apply_scale_rounds_half_up_single_round():
    # 0.5 * 2**30 ... value * 0.5 with single rounding: 3 * 0.5 = 1.5 -> 2, -3 * 0.5 -> -1
    multiplier, shift = encode_scale(0.5)
    assert apply_scale(np.array([3, -3, 5]), multiplier, shift).tolist() == [2, -1, 3]


def test_apply_scale_matches_float_rounding_away_from_ties():
    rng = np.random.default_rng(0)
    values = rng.integers(-(2**20), 2**20, 10000)
    scale = 0.0037
    multiplier, shift = encode_scale(scale)
    expected = np.floor(values * scale + 0.5)
    near_tie = np.abs(values * scale - np.floor(values * scale) - 0.5) < 1e-6
    got = apply_scale(values, multiplier, shift)
    assert np.array_equal(got[~near_tie], expected[~near_tie])


def test_qparams_quantize_like_torch():
    q = QParams((0.1,), -128, "int8", -128, 127)
    assert q.quantize(0.0) == -128
    assert q.quantize(0.25) == -126  # 2.5 rounds half to even
    assert q.quantize(3.4e38) == 127 and q.quantize(-3.4e38) == -128
