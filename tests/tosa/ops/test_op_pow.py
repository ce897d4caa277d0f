"""pow by a number (``x ** 2``, ``x ** 3``, ``x ** 0.5``, ...): the TOSA reference model against
torch's quantized graph."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Pow(nn.Module):
    def __init__(self, exponent, positive=False):
        super().__init__()
        self.exponent, self.positive = exponent, positive

    def forward(self, x):
        return (x.abs() + 0.05 if self.positive else x) ** self.exponent


class Variance(nn.Module):
    """The RMSNorm / variance pattern: ``(x - mean) ** 2`` averaged."""

    def forward(self, x):
        return (x - x.mean(-1, keepdim=True)).pow(2).mean(-1, keepdim=True)


class GeluTanh(nn.Module):
    """GPT-2's gelu_new written out: ``0.044715 * x ** 3``."""

    def forward(self, x):
        inner = 0.7978845608 * (x + 0.044715 * torch.pow(x, 3))
        return 0.5 * x * (1.0 + torch.tanh(inner))


EXACT = [
    pytest.param(Pow(2), ((1, 8, 6, 6), 2.0), id="square_image"),
    pytest.param(Pow(3), ((2, 16), 2.0), id="cube_features"),
    pytest.param(Pow(0.5, positive=True), ((1, 8, 6, 6), 2.0), id="sqrt"),
    pytest.param(Pow(-1.0, positive=True), ((2, 16), 2.0), id="reciprocal"),
    pytest.param(Pow(1.5, positive=True), ((1, 4, 10), 2.0), id="power_1_5"),
]


@pytest.mark.parametrize("module, shape", EXACT)
def test_pow_int8_is_an_exact_table(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] == 0
    assert case.ops()[-1] == "TABLE"


@pytest.mark.parametrize(
    "exponent, muls", [pytest.param(2, 1, id="square"), pytest.param(3, 2, id="cube")]
)
def test_pow_int16_multiplies(exponent, muls, tmp_path):
    """x ** 2 exact, x ** 3 rounds the square once more: within 1 of torch (whose float32
    q/dq may also land on the other side of a tie at int16)."""
    case, report = run_case(Pow(exponent), [((1, 8, 6, 6), 2.0)], tmp_path, A16W8)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] <= 1
    assert case.ops().count("MUL") == muls and "TABLE" not in case.ops()


@pytest.mark.parametrize("module, shape", EXACT)
def test_pow_fp_matches_torch(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path, FP)
    assert report["passed"]


@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize(
    "module",
    [pytest.param(Variance(), id="variance"), pytest.param(GeluTanh(), id="gelu_tanh_by_hand")],
)
def test_pow_in_context_matches_torch(module, dtype, tmp_path):
    case, report = run_case(module, [((1, 8, 32), 2.0)], tmp_path, dtype)
    assert report["passed"]
