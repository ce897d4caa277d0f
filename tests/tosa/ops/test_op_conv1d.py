"""conv1d as CONV2D / DEPTHWISE_CONV2D over an image one row high: the TOSA reference model
against torch's quantized graph, over shapes, padding modes and types."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def conv1d(cin, cout, kernel, stride=1, padding=0, dilation=1, groups=1, bias=True):
    torch.manual_seed(0)
    module = nn.Conv1d(cin, cout, kernel, stride, padding, dilation, groups, bias)
    nn.init.uniform_(module.weight, -0.5, 0.5)
    return module


DW = "DEPTHWISE_CONV2D"
CASES = [
    pytest.param(conv1d(16, 32, 3, padding=1), (1, 16, 64), "CONV2D", id="k3_pad1"),
    pytest.param(conv1d(8, 16, 5, 2, bias=False), (2, 8, 41), "CONV2D", id="k5_s2_batch2"),
    pytest.param(conv1d(8, 8, 4, 1, "same", 2), (1, 8, 30), "CONV2D", id="same_even_k_dil2"),
    pytest.param(conv1d(8, 8, 3, padding="valid"), (1, 8, 20), "CONV2D", id="valid"),
    pytest.param(conv1d(16, 16, 5, 2, 2, groups=16), (1, 16, 49), DW, id="depthwise_s2"),
    pytest.param(conv1d(8, 16, 3, 1, 1, groups=8), (1, 8, 20), DW, id="depthwise_m2"),
]


@pytest.mark.parametrize("module, shape, op", CASES)
def test_conv1d_int8_matches_torch(module, shape, op, tmp_path):
    """The [N, C, L] input is TRANSPOSEd to [N, L, C] and viewed as NHWC [N, 1, L, C]."""
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] <= 1
    assert case.ops() == ["TRANSPOSE", "RESHAPE", op, "RESCALE", "RESHAPE", "TRANSPOSE"]


@pytest.mark.parametrize("dtype", [A16W8, FP])
@pytest.mark.parametrize("module, shape, op", [CASES[0], CASES[2], CASES[4]])
def test_conv1d_other_types_match_torch(module, shape, op, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert op in case.ops()


@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_grouped_conv1d_is_one_conv_per_group(dtype, tmp_path):
    case, report = run_case(conv1d(8, 12, 3, padding=1, groups=4), [(1, 8, 24)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops().count("CONV2D") == 4 and case.ops().count("SLICE") == 4


class Stack(nn.Module):
    """A TCN-like stack: the TRANSPOSEs between conv1d layers cancel."""

    def __init__(self):
        super().__init__()
        self.a = conv1d(8, 16, 3, padding=1)
        self.b = conv1d(16, 16, 3, padding=2, dilation=2)
        self.c = conv1d(16, 16, 3, padding=1, groups=16)

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


def test_stacked_conv1d_transposes_only_at_the_ends(tmp_path):
    case, report = run_case(Stack(), [(1, 8, 32)], tmp_path)
    assert report["passed"]
    assert case.ops().count("TRANSPOSE") == 2


class Causal(nn.Module):
    """WaveNet-style causal convolution: pad (dilation * (k - 1)) on the left only."""

    def __init__(self, dilation):
        super().__init__()
        self.dilation, self.conv = dilation, conv1d(8, 8, 3, dilation=dilation)

    def forward(self, x):
        return self.conv(nn.functional.pad(x, (2 * self.dilation, 0)))


@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_causal_padding_folds_into_the_conv(dtype, tmp_path):
    case, report = run_case(Causal(4), [(1, 8, 40)], tmp_path, dtype)
    assert report["passed"]
    assert "PAD" not in case.ops()


def test_unbatched_conv1d_matches_torch(tmp_path):
    case, report = run_case(conv1d(4, 8, 3, padding=1), [(4, 16)], tmp_path)
    assert report["passed"]
    assert "CONV2D" in case.ops()
