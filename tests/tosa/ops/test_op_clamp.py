"""CLAMP (relu, relu6, hardtanh, clamp): exact in the integer domain."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Act(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


ACTIVATIONS = [
    pytest.param(torch.relu, id="relu"),
    pytest.param(nn.functional.relu6, id="relu6"),
    pytest.param(lambda x: nn.functional.hardtanh(x, -0.25, 0.5), id="hardtanh"),
    pytest.param(lambda x: torch.clamp(x, min=-0.3), id="clamp_min_only"),
]


@pytest.mark.parametrize("fn", ACTIVATIONS)
@pytest.mark.parametrize("shape", [(1, 4, 6, 6), (5, 7)], ids=["nchw", "rank2"])
def test_standalone_activation_int8_is_exact(fn, shape, tmp_path):
    case, report = run_case(Act(fn), [(shape, 8.0)], tmp_path)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] == 0
    assert case.ops() == ["CLAMP"]


@pytest.mark.parametrize("dtype", [A16W8, FP])
def test_activation_other_types(dtype, tmp_path):
    case, report = run_case(Act(nn.functional.relu6), [((1, 4, 6, 6), 8.0)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == ["CLAMP"]


@pytest.mark.parametrize("fn", ACTIVATIONS)
def test_activation_fp32_is_one_clamp(fn, tmp_path):
    case, report = run_case(Act(fn), [((1, 4, 6, 6), 8.0)], tmp_path, FP)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff"] == 0.0
    assert case.ops() == ["CLAMP"]
