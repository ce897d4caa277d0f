"""ADD: the TOSA reference model against torch's quantized graph, over shapes and types."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Add(nn.Module):
    def forward(self, x, y):
        return x + y


SHAPES = [
    pytest.param([(1, 8, 8, 16), (1, 8, 8, 16)], id="nchw_equal_scales"),
    pytest.param([((1, 4, 5, 6), 4.0), (1, 4, 5, 6)], id="nchw_scales_differ_4x"),
    pytest.param([(1, 4, 5, 6), ((1, 4, 1, 1), 0.1)], id="broadcast_hw"),
    pytest.param([(3, 7), ((3, 7), 2.5)], id="rank2"),
]


@pytest.mark.parametrize("shapes", SHAPES)
def test_add_int8_matches_torch(shapes, tmp_path):
    case, report = run_case(Add(), shapes, tmp_path)
    assert report["passed"]
    assert case.ops() == ["RESCALE", "RESCALE", "ADD", "RESCALE"]


@pytest.mark.parametrize(
    "dtype, ops",
    [
        pytest.param(A16W8, ["RESCALE", "RESCALE", "ADD", "RESCALE"], id="a16w8"),
        pytest.param(FP, ["ADD"], id="fp32"),
    ],
)
def test_add_other_types_match_torch(dtype, ops, tmp_path):
    case, report = run_case(Add(), [(1, 4, 5, 6), ((1, 4, 5, 6), 3.0)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == ops


class AddScalar(nn.Module):
    def forward(self, x):
        return x + 0.25


@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_add_scalar_is_an_int32_constant(dtype, tmp_path):
    """int16: the number is an int32 constant; int8 is one TABLE (a function of 256 codes)."""
    case, report = run_case(AddScalar(), [(3, 8)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == (["TABLE"] if dtype == INT8 else ["RESCALE", "ADD", "RESCALE"])


@pytest.mark.parametrize(
    "shapes",
    [
        pytest.param([(1, 4, 5, 6), (6,)], id="nchw_plus_vector_along_w"),
        pytest.param([(2, 5, 8), ((1, 8), 0.5)], id="tokens_plus_rank2"),
    ],
)
def test_add_broadcasts_lower_rank_like_torch(shapes, tmp_path):
    case, report = run_case(Add(), shapes, tmp_path)
    assert report["passed"]
    assert case.ops().count("ADD") == 1


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


ALPHA = [
    pytest.param(Fn(lambda x, y: torch.add(x, y, alpha=-2)), [(2, 3, 8), (2, 3, 8)], id="negative_alpha"),
    pytest.param(Fn(lambda x, y: torch.add(x, y, alpha=0.25)), [(1, 4, 5, 6), (1, 4, 1, 1)], id="alpha_broadcast"),
    pytest.param(Fn(lambda x, y: x.clone().add_(y, alpha=3)), [(257,), (257,)], id="inplace_alpha_257"),
    pytest.param(Fn(lambda x: x.clone().add_(0.5)), [(2, 3, 4, 5, 6)], id="inplace_number_rank5"),
    pytest.param(Fn(lambda x: torch.ops.aten.add.Scalar(x, 2, alpha=3)), [(1, 1)], id="add_Scalar_size1"),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize("module, shapes", ALPHA)
def test_add_alpha_and_number_forms(module, shapes, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0].get("max_abs_diff_int", 0) <= (0 if dtype == INT8 else 1)


def test_int8_add_of_a_number_is_one_table(tmp_path):
    case, report = run_case(Fn(lambda x: x + 0.75), [(1, 4, 5, 6)], tmp_path)
    assert report["passed"] and report["outputs"][0]["max_abs_diff_int"] == 0
    assert case.ops() == ["TABLE"]
