"""ADD: the TOSA reference model against torch's quantized graph, over shapes and types."""

import pytest
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
    case, report = run_case(AddScalar(), [(3, 8)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == ["RESCALE", "ADD", "RESCALE"]


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
