"""MUL (aten.mul): the TOSA reference model against torch, over shapes and types."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Mul(nn.Module):
    def forward(self, x, y):
        return x * y


class Scale(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


SHAPES = [
    pytest.param(Mul(), [(1, 4, 5, 6), ((1, 4, 5, 6), 3.0)], ["RESCALE", "RESCALE", "MUL", "RESCALE"], id="nchw"),
    pytest.param(Mul(), [(1, 4, 5, 6), ((1, 4, 1, 1), 0.5)], ["RESCALE", "RESCALE", "MUL", "RESCALE"], id="broadcast_hw_gating"),
    pytest.param(Scale(0.5), [(1, 4, 5, 6)], ["RESCALE"], id="positive_scalar_is_a_rescale"),
    pytest.param(Scale(-2.0), [(2, 7)], ["RESCALE", "SUB", "RESCALE"], id="negative_scalar"),
]  # fmt: skip


@pytest.mark.parametrize("module, shapes, ops", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_mul_matches_torch(module, shapes, ops, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] <= 1
    assert case.ops() == ops


class Divide(nn.Module):
    def forward(self, x):
        return x / 8


@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_division_by_a_number_is_a_rescale(dtype, tmp_path):
    case, report = run_case(Divide(), [((1, 4, 5, 6), 3.0)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == ["RESCALE"]


@pytest.mark.parametrize(
    "module, shapes",
    [
        pytest.param(Mul(), [(1, 4, 5, 6), ((1, 4, 5, 6), 3.0)], id="nchw"),
        pytest.param(Mul(), [(1, 4, 5, 6), ((1, 4, 1, 1), 0.5)], id="broadcast_hw_gating"),
        pytest.param(Mul(), [(2, 3, 8), ((8,), 2.0)], id="broadcast_lower_rank"),
        pytest.param(Scale(-2.0), [(2, 7)], id="negative_scalar"),
        pytest.param(Divide(), [((1, 4, 5, 6), 3.0)], id="divide_by_number"),
    ],
)
def test_mul_fp32_is_one_mul(module, shapes, tmp_path):
    """One MUL whose int8 shift operand TOSA keeps in every profile, FP-only graphs too."""
    case, report = run_case(module, shapes, tmp_path, FP)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff"] == 0.0
    assert case.ops()[-1] == "MUL" and case.ops().count("MUL") == 1


class ZeroTimes(nn.Module):
    """``x * 0`` beside a live branch (an ablated feature, ``addmm(..., alpha=0)``)."""

    def forward(self, x):
        return x * 0 + x, x * 0.0


@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_mul_by_zero_is_the_zero_point(dtype, tmp_path):
    case, report = run_case(ZeroTimes(), [(1, 4, 8)], tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][1].get("max_abs_diff_int", 0) == 0


class IntegerProducts(nn.Module):
    """What models do with ids and masks: ``ids * 3``, ``mask * ids``, int8 products that
    wrap like torch's (``100 * 3`` is ``44`` in int8)."""

    def forward(self, ids, other):
        small = ids.to(torch.int8)
        mask = other > 4
        return ids * 3, ids * other, small * 3, small * other.to(torch.int8), mask * ids


def test_integer_products_match_torch(tmp_path):
    from tests.tosa.lowering_cases import integers

    _, report = run_case(IntegerProducts(), [integers((2, 32), 120), integers((2, 32), 9)],
                         tmp_path)  # fmt: skip
    assert report["passed"]
    assert all(o["max_abs_diff"] == 0 for o in report["outputs"])
    assert all(o["max_abs_diff"] == 0 for o in report["variants"]["u55"]["outputs"])
