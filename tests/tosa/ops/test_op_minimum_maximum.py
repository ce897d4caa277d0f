"""MINIMUM / MAXIMUM: the TOSA reference model against torch's quantized graph, over shapes
and types."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Minimum(nn.Module):
    def forward(self, x, y):
        return torch.minimum(x, y)


class Maximum(nn.Module):
    def forward(self, x, y):
        return torch.maximum(x, y)


class ClampMinMax(nn.Module):
    """clamp_min / clamp_max by a tensor are MAXIMUM / MINIMUM."""

    def forward(self, x, lo):
        return torch.clamp_max(torch.clamp_min(x, lo), lo + 1.0)


class MaximumOfSums(nn.Module):
    """Inputs produced by ADDs with their own output qparams: the second is requantized."""

    def forward(self, x, y):
        return torch.maximum(x + 0.5, y + y)


SHAPES = [
    pytest.param([(1, 8, 8, 16), (1, 8, 8, 16)], id="nchw"),
    pytest.param([(1, 4, 5, 6), ((1, 4, 1, 1), 3.0)], id="broadcast_hw_scales_differ"),
    pytest.param([(2, 5, 8), ((8,), 0.25)], id="tokens_vs_vector"),
    pytest.param([(3, 7), ((3, 7), 2.5)], id="rank2"),
]


@pytest.mark.parametrize("module, op", [(Minimum(), "MINIMUM"), (Maximum(), "MAXIMUM")])
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_minimum_maximum_match_torch(module, op, shapes, dtype, tmp_path):
    """Integer: both inputs widened to int32 (MINIMUM/MAXIMUM are int32-only), narrowed once."""
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    if dtype != FP:  # every RESCALE has scale 1.0: bit-exact against torch
        assert report["outputs"][0]["max_abs_diff_int"] == 0
    ops = [o for o in case.ops() if o != "RESHAPE"]  # broadcast operands are reshaped to rank
    assert ops == ([op] if dtype == FP else ["RESCALE", "RESCALE", op, "RESCALE"])


@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_maximum_of_differently_quantized_inputs(dtype, tmp_path):
    case, report = run_case(MaximumOfSums(), [(1, 4, 5, 6), ((1, 4, 5, 6), 2.0)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops().count("MAXIMUM") == 1


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_clamp_by_a_tensor_matches_torch(dtype, tmp_path):
    case, report = run_case(ClampMinMax(), [((2, 5, 8), 2.0), (8,)], tmp_path, dtype)
    assert report["passed"]
    assert [op for op in case.ops() if op.endswith("MUM")] == ["MAXIMUM", "MINIMUM"]
