"""A dilated convolution whose dilation reaches past its input map, as DeepLabV3's ASPP has
it: the kernel rows and columns that only ever read padding are dropped in the lowering
(``conv.drop_padding_taps``), so the dilation-12 and -18 branches on an 8x8 map are 1x1
convolutions of their centre tap. The graph still verifies (TOSA reference model against
torch), and the real Vela counts fewer MACs and cycles on Ethos-U85-256 and -U55-128 than
for the same model lowered with every tap (the rewrite switched off: the form it replaces)."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from pipeline.chain.run import compile_model
from pipeline.tosa.ops import op_conv2d

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref, pytest.mark.needs_vela]

NPUS = ("ethos-u85-256", "ethos-u55-128")
MAP, CIN, COUT, RATES = 8, 32, 16, (6, 12, 18)


def _branch(conv: nn.Conv2d) -> nn.Sequential:
    bn = nn.BatchNorm2d(conv.out_channels)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    return nn.Sequential(conv, bn, nn.ReLU(inplace=True))


class ASPP(nn.Module):
    """torchvision's DeepLabV3 head, small: a 1x1 branch, three dilated 3x3 branches
    (padding = dilation, no bias, BatchNorm, in-place ReLU), image pooling, a 1x1 projection
    and dropout."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.convs = nn.ModuleList([_branch(nn.Conv2d(CIN, COUT, 1, bias=False))])
        for rate in RATES:
            self.convs.append(_branch(nn.Conv2d(CIN, COUT, 3, padding=rate, dilation=rate,
                                                bias=False)))
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(CIN, COUT, 1, bias=False),
                                  nn.ReLU(inplace=True))
        self.project = nn.Sequential(_branch(nn.Conv2d(5 * COUT, COUT, 1, bias=False)),
                                     nn.Dropout(0.5))

    def forward(self, x):
        size = x.shape[-2:]
        branches = [conv(x) for conv in self.convs]
        branches.append(F.interpolate(self.pool(x), size=size, mode="bilinear",
                                      align_corners=False))
        return self.project(torch.cat(branches, dim=1))


def _compile(folder):
    torch.manual_seed(1)
    samples = [(torch.randn(1, CIN, MAP, MAP),) for _ in range(4)]
    return compile_model(ASPP().eval(), samples[0], samples, samples[:2], folder, npus=NPUS)


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """The ASPP compiled as the lowering does it now, and with every tap kept."""
    pruned = _compile(tmp_path_factory.mktemp("pruned"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(op_conv2d, "drop_padding_taps", lambda value, geometry, in_hw:
                      (value, geometry))
        full = _compile(tmp_path_factory.mktemp("every_tap"))
    return pruned, full


def _kernels(compiled) -> list[tuple[int, int]]:
    graph = compiled.lowering.graph
    return sorted(tuple(graph.tensors[op.inputs[1]].shape[1:3])
                  for op in graph.operators if op.op == "CONV2D")


def test_aspp_dilation_past_the_map_is_a_1x1_convolution(builds):
    pruned, full = builds
    # Branch 1x1, the pooled 1x1, the projection and the dilation-12/18 branches: 1x1; the
    # dilation-6 branch reaches into the 8x8 map with every tap and stays 3x3.
    assert _kernels(pruned) == [(1, 1)] * 5 + [(3, 3)]
    assert _kernels(full) == [(1, 1)] * 3 + [(3, 3)] * 3
    assert pruned.report["passed"] and full.report["passed"]


@pytest.mark.parametrize("npu", NPUS)
def test_aspp_fewer_macs_and_cycles(builds, npu):
    pruned, full = builds
    print(npu, {name: (b.vela[npu]["nn_macs"], b.vela[npu]["cycles_npu"])
                for name, b in (("every tap", full), ("padding taps dropped", pruned))})
    assert pruned.vela[npu]["nn_macs"] < full.vela[npu]["nn_macs"]
    assert pruned.vela[npu]["cycles_npu"] < full.vela[npu]["cycles_npu"]
