"""Every operator the lowering emits, compiled by Vela for Ethos-U55-128 and -U85-256: the
pre-Vela constraint check passes and Vela places every operator on the NPU."""

import pytest
import torch
from torch import nn

from pipeline.ethosu.vela import run_vela
from pipeline.ethosu.placement import check_npu_constraints
from models.cases.networks import ACCELERATORS
from pipeline.chain.vela import vela_args
from tests.tosa.lowering_cases import Fn, lower_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_vela]


class Weighted(nn.Module):
    """``fn(x, W, b)`` with a parameter W [16, 8] (a linear weight transposed) and bias b [8]."""

    def __init__(self, fn):
        super().__init__()
        torch.manual_seed(0)
        self.fn = fn
        self.weight, self.bias = nn.Parameter(torch.randn(16, 8) / 4), nn.Parameter(torch.randn(8))

    def forward(self, x):
        return self.fn(x, self.weight, self.bias)


IMAGE, TOKENS = (1, 8, 8, 8), (1, 6, 16)
CASES = {
    "depthwise_multiplier2": (nn.Conv2d(8, 16, 3, padding=1, groups=8), [IMAGE]),
    "grouped_conv": (nn.Conv2d(8, 8, 3, padding=1, groups=2), [IMAGE]),
    "tf_same_pad_conv": (
        Fn(lambda m, x: m[0](nn.functional.pad(x, (0, 1, 0, 1))), nn.Conv2d(8, 4, 3, 2)),
        [IMAGE],
    ),
    "pad": (Fn(lambda m, x: nn.functional.pad(x, (1, 1, 2, 0))), [IMAGE]),
    "avg_pool_include_pad": (nn.AvgPool2d(3, 1, 1), [IMAGE]),
    "adaptive_pool_3x3": (nn.AdaptiveAvgPool2d(3), [IMAGE]),
    # Strides above 3 and kernels above 8: Vela splits them itself, also on U55.
    "avg_pool_k8_s8": (nn.AvgPool2d(8), [(1, 8, 16, 16)]),
    "avg_pool_k12_s4": (nn.AvgPool2d(12, 4), [(1, 8, 24, 24)]),
    "mean_hw": (Fn(lambda m, x: x.mean((2, 3))), [IMAGE]),
    "mean_tokens": (Fn(lambda m, x: x.mean(-1, keepdim=True)), [TOKENS]),
    "mul_sub_scalar": (Fn(lambda m, x, y: x * y - 0.5), [IMAGE, IMAGE]),
    "cat_channels": (Fn(lambda m, x, y: torch.cat([x, y], 1)), [IMAGE, IMAGE]),
    "tables": (Fn(lambda m, x: torch.sigmoid(nn.functional.gelu(x))), [TOKENS]),
    "amax_softmax": (Fn(lambda m, x: torch.softmax(x, -1)), [TOKENS]),
    "layer_norm": (nn.LayerNorm(16), [TOKENS]),
    "matmul_attention": (Fn(lambda m, q, k: q @ k.transpose(-2, -1)), [(1, 2, 6, 8), (1, 2, 6, 8)]),
    "upsample_x2": (nn.Upsample(scale_factor=2), [IMAGE]),
    "select_slice": (Fn(lambda m, x: x.unbind(1)[0][:, 2:] + 0.25), [(1, 3, 6, 8)]),
    "minimum_broadcast": (Fn(lambda m, x, y: torch.minimum(x, y)), [IMAGE, (1, 8, 1, 1)]),
    "maximum_tokens": (Fn(lambda m, x, y: torch.maximum(x, y)), [TOKENS, TOKENS]),
    "sum_hw": (Fn(lambda m, x: x.sum((2, 3))), [IMAGE]),
    "sum_tokens_keepdim": (Fn(lambda m, x: x.sum(-1, keepdim=True)), [TOKENS]),
    "sum_all": (Fn(lambda m, x: x.sum()), [TOKENS]),
    "x_at_weights": (Weighted(lambda x, w, b: x @ w), [TOKENS]),
    "addmm_weights": (Weighted(lambda x, w, b: torch.addmm(b, x, w)), [(4, 16)]),
    "mm_activations": (Fn(lambda m, x, y: torch.mm(x, y)), [(6, 16), (16, 8)]),
}


@pytest.fixture(scope="module", params=list(CASES))
def lowered(request, tmp_path_factory):
    module, shapes = CASES[request.param]
    return lower_case(module, shapes, tmp_path_factory.mktemp(request.param))


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_every_operator_runs_on_the_npu(lowered, accelerator, tmp_path):
    check_npu_constraints(lowered.tosa, accelerator, where="test/vela")
    outputs = run_vela(lowered.tosa, tmp_path, vela_args(accelerator), where="test/vela")
    assert (tmp_path / "figures.json").is_file() and outputs["npz"].is_file()
