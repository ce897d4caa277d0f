"""prelu (one or per-channel slopes): the TOSA reference model against torch's quantized
graph - exact, since the float slopes join the RESCALE scales and each path rounds once."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def prelu(channels=1, low=0.25, high=0.25):
    torch.manual_seed(0)
    module = nn.PReLU(channels)
    nn.init.uniform_(module.weight, low, high)
    return module


SINGLE = prelu()
PER_CHANNEL = prelu(16, 0.0, 1.0)
CASES = [
    pytest.param(SINGLE, ((1, 16, 8, 8), 2.0), id="one_slope_image"),
    pytest.param(PER_CHANNEL, ((1, 16, 8, 8), 2.0), id="per_channel_image"),
    pytest.param(prelu(16, 1.0, 2.0), ((1, 16, 6, 6), 2.0), id="slopes_above_1"),
    pytest.param(prelu(16, -0.5, 1.5), ((1, 16, 6, 6), 2.0), id="negative_and_above_1"),
    pytest.param(prelu(32, 0.0, 0.5), ((4, 32), 2.0), id="per_channel_features"),
    pytest.param(prelu(8, 0.0, 0.5), ((1, 8, 40), 2.0), id="per_channel_after_conv1d"),
    pytest.param(prelu(), ((1, 8, 40), 2.0), id="one_slope_sequence"),
]


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize("module, shape", CASES)
def test_prelu_matches_torch(module, shape, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    if dtype != FP:  # int16: torch's float32 q/dq may land on the other side of a tie
        assert report["outputs"][0]["max_abs_diff_int"] <= (dtype == A16W8)


@pytest.mark.parametrize(
    "module, ops",
    [
        pytest.param(SINGLE, ["TABLE"], id="one_slope_is_a_table"),
        pytest.param(
            PER_CHANNEL,
            ["DEPTHWISE_CONV2D", "RESCALE", "RESCALE"] * 2 + ["MAXIMUM", "RESCALE"],
            id="slopes_in_0_1_are_a_maximum",
        ),
    ],
)
def test_int8_forms(module, ops, tmp_path):
    case, report = run_case(module, [((1, 16, 8, 8), 2.0)], tmp_path)
    assert report["passed"]
    assert case.ops() == ops


class ConvPReLU(nn.Module):
    def __init__(self, channels):
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.prelu = nn.Conv2d(3, 16, 3, padding=1), prelu(channels, 0.0, 0.5)

    def forward(self, x):
        return self.prelu(self.conv(x))


@pytest.mark.parametrize("channels", [1, 16])
@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_conv_then_prelu_matches_torch(channels, dtype, tmp_path):
    case, report = run_case(ConvPReLU(channels), [(1, 3, 8, 8)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops()[0] == "CONV2D"
