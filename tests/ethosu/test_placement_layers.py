"""conv1d, transposed convolutions, group/instance norm, prelu, pow and ceil-mode pooling, as
real models use them, compiled by Vela for Ethos-U55-128 and -U85-256 from the NPU's own
variant of the graph (what a build compiles): the pre-Vela constraint check passes and Vela
places every operator on the NPU. int16 (a16w8) cases are marked slow."""

import pytest
import torch
from torch import nn

from pipeline.config.npu import NpuConfig
from pipeline.ethosu.vela import run_vela
from pipeline.ethosu.placement import check_npu_constraints
from models.cases.networks import ACCELERATORS
from pipeline.chain.vela import vela_args
from tests.tosa.lowering_cases import A16W8, INT8, Fn, lower_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_vela]


def seeded(factory, *args, **kwargs):
    torch.manual_seed(0)
    module = factory(*args, **kwargs)
    if isinstance(module, nn.PReLU) and module.weight.numel() > 1:
        nn.init.uniform_(module.weight, 0.0, 0.5)
    return module


IMAGE, SEQUENCE = (1, 16, 16, 16), (1, 16, 64)
CASES = {
    "conv1d_k3": (seeded(nn.Conv1d, 16, 32, 3, padding=1), [SEQUENCE]),
    "conv1d_same_dilated": (seeded(nn.Conv1d, 16, 16, 3, padding="same", dilation=4), [SEQUENCE]),
    "conv1d_depthwise_s2": (seeded(nn.Conv1d, 16, 16, 5, 2, 2, groups=16), [SEQUENCE]),
    "conv1d_causal": (
        Fn(lambda m, x: m[0](nn.functional.pad(x, (4, 0))),
           seeded(nn.Conv1d, 16, 16, 3, dilation=2)),
        [SEQUENCE],
    ),
    "conv2d_dilated": (seeded(nn.Conv2d, 16, 16, 3, padding=2, dilation=2), [IMAGE]),
    "conv_transpose2d_k4_s2": (seeded(nn.ConvTranspose2d, 16, 8, 4, 2, 1), [IMAGE]),
    "conv_transpose2d_k3_s2_odd": (seeded(nn.ConvTranspose2d, 16, 8, 3, 2, 1), [IMAGE]),
    "conv_transpose2d_k3_s1": (seeded(nn.ConvTranspose2d, 16, 8, 3, 1, 1), [IMAGE]),
    "conv_transpose1d_k4_s2": (seeded(nn.ConvTranspose1d, 16, 8, 4, 2, 1), [SEQUENCE]),
    "group_norm": (seeded(nn.GroupNorm, 4, 16), [IMAGE]),
    "instance_norm2d": (seeded(nn.InstanceNorm2d, 16, affine=True), [IMAGE]),
    "instance_norm1d": (seeded(nn.InstanceNorm1d, 16), [SEQUENCE]),
    "prelu": (seeded(nn.PReLU), [IMAGE]),
    "prelu_per_channel": (seeded(nn.PReLU, 16), [IMAGE]),
    "pow_2": (Fn(lambda m, x: x**2), [IMAGE]),
    "pow_3": (Fn(lambda m, x: x**3), [IMAGE]),
    "max_pool_ceil": (nn.MaxPool2d(3, 2, ceil_mode=True), [IMAGE]),
    "avg_pool_ceil_include_pad": (nn.AvgPool2d(3, 2, 1, ceil_mode=True), [(1, 16, 15, 15)]),
    "avg_pool_ceil_exclude_pad": (
        nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False),
        [(1, 16, 15, 15)],
    ),
}  # fmt: skip
DTYPES = [INT8, pytest.param(A16W8, marks=pytest.mark.slow)]


@pytest.fixture(scope="module", params=DTYPES)
def dtype(request):
    return request.param


@pytest.fixture(scope="module", params=list(CASES))
def lowered(request, dtype, tmp_path_factory):
    module, shapes = CASES[request.param]
    return lower_case(module, shapes, tmp_path_factory.mktemp(f"{request.param}_{dtype}"), dtype)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_every_operator_runs_on_the_npu(lowered, accelerator, tmp_path):
    tosa = lowered.variant(NpuConfig.model_validate({"config": accelerator}).variant)
    check_npu_constraints(tosa, accelerator, where="test/vela")
    outputs = run_vela(tosa, tmp_path, vela_args(accelerator), where="test/vela")
    assert (tmp_path / "figures.json").is_file() and outputs["npz"].is_file()
