"""TRANSPOSE_CONV2D (conv_transpose1d / conv_transpose2d): the TOSA reference model against
torch's quantized graph; the NPU variants' phase CONV2Ds (split_transpose_conv_pass) are
verified the same way by verify."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def deconv(cin, cout, kernel, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
           bias=True, dims=2):  # fmt: skip
    torch.manual_seed(0)
    module = (nn.ConvTranspose2d if dims == 2 else nn.ConvTranspose1d)(
        cin, cout, kernel, stride, padding, output_padding, groups, bias, dilation
    )
    nn.init.uniform_(module.weight, -0.5, 0.5)
    return module


CASES = [
    pytest.param(deconv(16, 8, 4, 2, 1), (1, 16, 8, 8), id="k4_s2_p1_upsample"),
    pytest.param(deconv(8, 16, 3, 2, 1, 1), (1, 8, 5, 7), id="k3_s2_p1_outpad1_rect"),
    pytest.param(deconv(8, 8, 3, 2, 1), (1, 8, 6, 6), id="k3_s2_p1_odd_output"),
    pytest.param(deconv(8, 8, 2, 2, bias=False), (2, 8, 4, 4), id="k2_s2_batch2"),
    pytest.param(deconv(8, 4, 3, 1, 1), (1, 8, 6, 6), id="k3_s1_p1"),
    pytest.param(deconv(8, 8, 4, 2, 1, groups=2), (1, 8, 6, 6), id="groups2"),
    pytest.param(deconv(4, 4, 3, 2, 2, 1, dilation=2), (1, 4, 5, 5), id="dilation2"),
]


@pytest.mark.parametrize("module, shape", CASES)
def test_conv_transpose2d_int8_matches_torch(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] <= 1
    assert case.ops() == ["TRANSPOSE_CONV2D", "RESCALE"]
    for name, variant in report["variants"].items():  # phase CONV2Ds, checked like the graph
        assert variant == "same graph" or variant["passed"], name


@pytest.mark.parametrize("dtype", [A16W8, FP])
@pytest.mark.parametrize("module, shape", [CASES[0], CASES[2], CASES[5]])
def test_conv_transpose2d_other_types_match_torch(module, shape, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert case.ops()[0] == "TRANSPOSE_CONV2D"


CASES_1D = [
    pytest.param(deconv(16, 8, 4, 2, 1, dims=1), (1, 16, 32), id="k4_s2_p1"),
    pytest.param(deconv(8, 8, 3, 2, 1, 1, dims=1), (2, 8, 20), id="k3_s2_outpad1_batch2"),
    pytest.param(deconv(8, 4, 5, 1, 2, dims=1), (1, 8, 16), id="k5_s1"),
]


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize("module, shape", CASES_1D)
def test_conv_transpose1d_matches_torch(module, shape, dtype, tmp_path):
    """Over an image one row high, like conv1d: TRANSPOSE [N, C, L] -> [N, L, C] and back."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    ops = case.ops()
    assert ops[:2] == ["TRANSPOSE", "RESHAPE"] and ops[-2:] == ["RESHAPE", "TRANSPOSE"]
    assert "TRANSPOSE_CONV2D" in ops


class Decoder(nn.Module):
    """A U-Net-like decoder step: upsample by a transposed convolution, conv, relu."""

    def __init__(self):
        super().__init__()
        self.up = deconv(16, 8, 2, 2)
        self.conv = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(torch.relu(self.up(x))))


@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_decoder_block_matches_torch(dtype, tmp_path):
    case, report = run_case(Decoder(), [(1, 16, 6, 6)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops().count("TRANSPOSE_CONV2D") == 1
