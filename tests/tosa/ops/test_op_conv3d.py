"""conv3d: written out as one conv2d over stacked depth taps (pipeline/normalise/conv3d.py), then
the TOSA reference model against torch, int8 / a16w8 / FP, and Vela's placement."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class VideoBlock(nn.Module):
    """A clip classifier's stem as users write it: conv3d, BatchNorm3d, in-place ReLU, a
    strided grouped conv3d with 'same'-style padding, dropout, global pooling."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv3d(3, 8, (3, 3, 3), padding=1, bias=False)
        self.bn = nn.BatchNorm3d(8)
        self.mix = nn.Conv3d(8, 8, (3, 1, 3), stride=(2, 1, 2), padding=(1, 0, 1), groups=2)
        self.drop = nn.Dropout(0.2)

    def forward(self, clip):
        x = torch.relu_(self.bn(self.stem(clip)))
        x = self.drop(self.mix(x))
        return x.mean(dim=(2, 3, 4))


CASES = [
    pytest.param(nn.Conv3d(2, 4, 3), (1, 2, 5, 8, 8), id="3x3x3_valid"),
    pytest.param(nn.Conv3d(3, 5, (2, 3, 3), stride=(1, 2, 2), padding=1, dilation=(2, 1, 1)),
                 (1, 3, 6, 9, 9), id="strided_padded_dilated"),
    pytest.param(nn.Conv3d(4, 4, 3, padding=1, groups=4), (2, 4, 4, 6, 6), id="depthwise_batch2"),
    pytest.param(nn.Conv3d(3, 4, (3, 2, 3), padding="same", bias=False), (1, 3, 4, 7, 5),
                 id="same_even_kernel"),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize("module, shape", CASES)
def test_conv3d_matches_torch(module, shape, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert "CONV2D" in case.ops()


@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_video_block_quantizes_lowers_and_verifies(dtype, tmp_path):
    torch.manual_seed(0)
    module = VideoBlock()
    module.bn.running_mean.uniform_(-0.5, 0.5)
    module.bn.running_var.uniform_(0.5, 2.0)
    case, report = run_case(module.eval(), [(1, 3, 6, 12, 12)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops().count("CONV2D") >= 2  # the two convolutions (a mean may add one)
