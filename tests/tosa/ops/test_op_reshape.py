"""view/reshape/flatten: RESHAPE, with TRANSPOSE only where NHWC data must move."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import FP, run_case

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
