"""group_norm / instance_norm written out before quantization: equal to torch in float, then
lowered and verified against torch's quantized graph."""

import pytest
import torch
from torch import nn

from pipeline.normalise.decompose import DECOMPOSITIONS
from pipeline.normalise.norms import group_norm, instance_norm
from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch]


@pytest.mark.parametrize("shape, groups", [((2, 12, 5, 7), 3), ((1, 8, 20), 1), ((3, 6), 2)])
def test_group_norm_matches_torch_in_float(shape, groups):
    x = torch.randn(shape) * 3 + 1
    weight, bias = torch.rand(shape[1]) + 0.5, torch.rand(shape[1]) - 0.5
    torch.testing.assert_close(
        group_norm(x, groups, weight, bias, 1e-5),
        nn.functional.group_norm(x, groups, weight, bias, 1e-5),
        atol=1e-5,
        rtol=1e-5,
    )
    assert torch.ops.aten.group_norm.default in DECOMPOSITIONS


def test_instance_norm_matches_torch_in_float():
    x = torch.randn(2, 4, 6, 6)
    weight, bias = torch.rand(4) + 0.5, torch.rand(4) - 0.5
    mean, var = torch.randn(4), torch.rand(4) + 0.5
    for use_input_stats in (True, False):
        ours = instance_norm(x, weight, bias, mean, var, use_input_stats, 0.1, 1e-5, False)
        theirs = nn.functional.instance_norm(x, mean, var, weight, bias, use_input_stats)
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
    assert torch.ops.aten.instance_norm.default in DECOMPOSITIONS


def affine(module):
    torch.manual_seed(0)
    with torch.no_grad():
        module.weight.uniform_(0.5, 1.5)
        module.bias.uniform_(-0.5, 0.5)
    return module


def with_running_stats():
    module = affine(nn.InstanceNorm2d(8, affine=True, track_running_stats=True))
    with torch.no_grad():
        module.running_mean.uniform_(-0.2, 0.2)
        module.running_var.uniform_(0.5, 2.0)
    return module


class ConvGroupNormSiLU(nn.Module):
    """A diffusion-UNet-style block: conv, GroupNorm, SiLU."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.norm = nn.Conv2d(4, 16, 3, padding=1), affine(nn.GroupNorm(4, 16))

    def forward(self, x):
        return nn.functional.silu(self.norm(self.conv(x)))


CASES = [
    pytest.param(affine(nn.GroupNorm(4, 16)), ((1, 16, 8, 8), 2.0), id="group_norm_4_groups"),
    pytest.param(affine(nn.GroupNorm(1, 8)), ((1, 8, 6, 6), 2.0), id="group_norm_1_group"),
    pytest.param(nn.GroupNorm(2, 8, affine=False), ((1, 8, 24), 2.0), id="group_norm_sequence"),
    pytest.param(nn.InstanceNorm2d(8), ((1, 8, 6, 6), 2.0), id="instance_norm_2d"),
    pytest.param(affine(nn.InstanceNorm2d(8, affine=True)), ((1, 8, 6, 6), 2.0),
                 id="instance_norm_2d_affine"),
    pytest.param(affine(nn.InstanceNorm1d(8, affine=True)), ((2, 8, 16), 2.0),
                 id="instance_norm_1d_affine_batch2"),
    pytest.param(with_running_stats(), ((1, 8, 6, 6), 2.0), id="instance_norm_running_stats"),
    pytest.param(ConvGroupNormSiLU(), ((1, 4, 8, 8), 1.0), id="conv_group_norm_silu"),
]  # fmt: skip


@pytest.mark.needs_tosa_ref
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize("module, shape", CASES)
def test_norms_lower_to_npu_operators_and_verify(module, shape, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    if dtype != FP:
        assert report["outputs"][0]["sqnr_db_vs_float"] > 25
        assert "TRANSPOSE" not in case.ops()  # statistics taken in NHWC, in place
