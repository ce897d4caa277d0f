"""linear as 1x1 CONV2D: the TOSA reference model against torch, over shapes and types."""

import pytest
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

SHAPES = [
    pytest.param(nn.Linear(16, 8), (1, 16), id="vector"),
    pytest.param(nn.Linear(12, 5, bias=False), (3, 12), id="batch3_nobias"),
    pytest.param(nn.Linear(8, 6), (2, 5, 8), id="rank3_tokens"),
]


@pytest.mark.parametrize("module, shape", SHAPES)
def test_linear_int8_matches_torch(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert case.ops() == ["RESHAPE", "CONV2D", "RESCALE", "RESHAPE"]


@pytest.mark.parametrize("dtype", [A16W8, FP])
def test_linear_other_types_match_torch(dtype, tmp_path):
    case, report = run_case(nn.Linear(16, 8), [(2, 16)], tmp_path, dtype)
    assert report["passed"]
    assert "CONV2D" in case.ops()
