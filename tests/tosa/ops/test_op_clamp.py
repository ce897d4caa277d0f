"""CLAMP (relu, relu6, hardtanh, clamp): exact in the integer domain."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

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


class ClampByTensors(nn.Module):
    """``torch.clamp(x, min=low, max=high)`` with bounds computed in the model (a learned
    range, a running min/max): aten.clamp.Tensor, written out as clamp_min then clamp_max."""

    def __init__(self, with_min=True, with_max=True):
        super().__init__()
        self.with_min, self.with_max = with_min, with_max

    def forward(self, x, low, high):
        return torch.clamp(
            x, min=low - 0.5 if self.with_min else None, max=high if self.with_max else None
        )


@pytest.mark.parametrize(
    "module, shapes",
    [
        pytest.param(ClampByTensors(), [(2, 4, 5)] * 3, id="both"),
        pytest.param(ClampByTensors(with_max=False), [(2, 4, 5)] * 3, id="min_only"),
        pytest.param(ClampByTensors(), [(2, 4, 5), (1, 4, 1), (5,)], id="broadcast_bounds"),
    ],
)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_clamp_by_tensors_matches_torch_exactly(module, shapes, dtype, tmp_path):
    """MAXIMUM / MINIMUM of operands sharing one quantization: the result is one of the
    operands' integers, exactly (a ``min`` above ``max`` gives ``max``, as in torch)."""
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0].get("max_abs_diff_int", 0) == 0
    ops = [op for op in case.ops() if op in ("MAXIMUM", "MINIMUM")]
    assert ops == (["MAXIMUM", "MINIMUM"] if module.with_max else ["MAXIMUM"])
