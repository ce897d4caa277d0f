"""view/reshape/flatten: RESHAPE, with TRANSPOSE only where NHWC data must move."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Reshape(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


SHAPES = [
    pytest.param(lambda x: torch.flatten(x, 1), (1, 8, 1, 1), ["RESHAPE"], id="flatten_1x1"),
    pytest.param(
        lambda x: torch.flatten(x, 1),
        (1, 4, 3, 5),
        ["TRANSPOSE", "RESHAPE"],
        id="flatten_nchw_moves_data",
    ),
    pytest.param(
        lambda x: x.view(2, 3, 2, 2), (2, 12), ["RESHAPE", "TRANSPOSE"], id="view_2d_to_4d"
    ),
    pytest.param(lambda x: x.reshape(4, 6), (2, 3, 4), ["RESHAPE"], id="reshape_rank3"),
]


@pytest.mark.parametrize("fn, shape, ops", SHAPES)
def test_reshape_int8_matches_torch(fn, shape, ops, tmp_path):
    case, report = run_case(Reshape(fn), [shape], tmp_path)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] == 0  # no rounding: exact
    assert case.ops() == ops


def test_reshape_fp32_matches_torch(tmp_path):
    case, report = run_case(Reshape(lambda x: torch.flatten(x, 1)), [(1, 4, 3, 5)], tmp_path, FP)
    assert report["passed"]
    assert case.ops() == ["TRANSPOSE", "RESHAPE"]


@pytest.mark.parametrize("fn, shape, ops", SHAPES)
def test_reshapes_fp32_move_data_like_int8(fn, shape, ops, tmp_path):
    case, report = run_case(Reshape(fn), [shape], tmp_path, FP)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff"] == 0.0
    assert case.ops() == ops


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize(
    "fn, shape",
    [pytest.param(lambda x: x.unflatten(1, (2, 3)), (2, 6, 3), id="unflatten_rank3_to_4"),
     pytest.param(lambda x: x.unflatten(0, (1, 257)), (257,), id="unflatten_rank1_257"),
     pytest.param(lambda x: x.unflatten(-1, (2, 2, 2)), (1, 3, 8), id="unflatten_to_rank5")],
)  # fmt: skip
def test_unflatten_is_a_reshape(fn, shape, dtype, tmp_path):
    case, report = run_case(Reshape(fn), [shape], tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert "RESHAPE" in case.ops()
