"""Exact qparams of constant operands (``pipeline/quant/constants.py``): computed from the
values whenever one grid the integer type spans holds them all, so torch's quantize ->
dequantize gives every value back; anything else is left to the observer."""

import pytest
import torch

from pipeline.quant.constants import exact_spec, integer_codes
from pipeline.quant.schemes import get_scheme

pytestmark = pytest.mark.needs_torch

INT8 = get_scheme("int8").activation
INT16 = get_scheme("a16w8").activation


def round_trip(value: torch.Tensor, spec) -> torch.Tensor:
    args = (spec.scale, spec.zero_point, spec.quant_min, spec.quant_max, spec.dtype)
    ops = torch.ops.quantized_decomposed
    codes = ops.quantize_per_tensor.default(value, *args)
    return ops.dequantize_per_tensor.default(codes, *args)


EXACT = [
    pytest.param(torch.eye(5), 1.0, id="eye"),
    pytest.param(torch.ones(2, 3), 1.0, id="ones"),
    pytest.param(torch.zeros(7), 1.0, id="zeros"),
    pytest.param(torch.arange(10.0), 1.0, id="arange"),
    pytest.param(torch.arange(-6.0, 6.0, 0.25), 0.25, id="arange_quarters_negative"),
    pytest.param(torch.full((3,), 4096.0), 4096.0, id="full_4096"),
    pytest.param(torch.tensor([-300.0, 0.0, 600.0]), 300.0, id="gcd_300"),
    pytest.param(torch.tensor(0.1), 0.1, id="scalar_tensor_0.1"),
]


@pytest.mark.parametrize("spec", [INT8, INT16], ids=["int8", "int16"])
@pytest.mark.parametrize("value, grid", EXACT)
def test_constants_on_a_grid_are_quantized_exactly(value, grid, spec):
    fixed = exact_spec(value, spec)
    assert fixed is not None
    assert fixed.scale == pytest.approx(grid, rel=1e-7)
    assert torch.equal(round_trip(value, fixed), value)
    if spec is INT16:
        assert fixed.zero_point == 0


@pytest.mark.parametrize(
    "value, spec",
    [
        pytest.param(torch.linspace(-1, 1, 300), INT8, id="more_values_than_codes"),
        pytest.param(torch.arange(300.0), INT8, id="int8_spans_too_little"),
        pytest.param(torch.tensor([0.1, 0.3, 1000.0]), INT8, id="grid_too_fine"),
        pytest.param(torch.tensor([1.0, float("inf")]), INT8, id="infinite"),
        pytest.param(torch.tensor([float("nan"), 2.0]), INT16, id="nan"),
    ],
)
def test_other_constants_are_left_to_the_observer(value, spec):
    assert exact_spec(value, spec) is None


def test_arange_beyond_int8_is_exact_in_int16():
    value = torch.arange(-1000.0, 1000.0)
    assert exact_spec(value, INT8) is None
    assert torch.equal(round_trip(value, exact_spec(value, INT16)), value)


@pytest.mark.parametrize(
    "source, spec, expected",
    [
        pytest.param(torch.int8, INT8, (-128, 127), id="int8_under_int8"),
        pytest.param(torch.int8, INT16, (-32768, 32767), id="int8_under_int16"),
        pytest.param(torch.int16, INT16, (-32768, 32767), id="int16_under_int16"),
        pytest.param(torch.int16, INT8, None, id="int16_under_int8"),
        pytest.param(torch.uint8, INT8, None, id="uint8_under_int8"),
        pytest.param(torch.int64, INT16, None, id="int64"),
        pytest.param(torch.bool, INT8, None, id="bool"),
    ],
)
def test_integers_made_float_keep_their_codes(source, spec, expected):
    fixed = integer_codes(source, spec)
    if expected is None:
        assert fixed is None
        return
    assert (fixed.scale, fixed.zero_point, fixed.dtype) == (1.0, 0, spec.dtype)
    assert (fixed.quant_min, fixed.quant_max) == expected
