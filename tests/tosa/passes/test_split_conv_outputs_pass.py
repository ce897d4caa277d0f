"""split_conv_outputs: a fused q/k/v projection read only in channel slices becomes one
convolution per slice. User-style attention blocks lowered with and without the pass: the
SLICEs are gone, verification (TOSA reference model against torch) passes, the real Vela
counts fewer cycles on Ethos-U85-256 and -U55-128, and a projection also read whole is left
alone."""

import pytest
import torch
from torch import nn

from pipeline import tosa
from tests.tosa.lowering_cases import lower_case, run_vela, verify_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref, pytest.mark.needs_vela]


class Attention(nn.Module):
    """Fused qkv, split with ``unbind`` after a permute; dropout on the weights; a residual
    added in place; optionally the whole projection also feeds a gate (``gated``)."""

    def __init__(self, dim=32, heads=2, gated=False):
        super().__init__()
        torch.manual_seed(0)
        self.heads, self.gated = heads, gated
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.drop = nn.Dropout(0.1)
        self.proj = nn.Linear(3 * dim if gated else dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        fused = self.qkv(self.norm(x))
        q, k, v = fused.reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        weights = self.drop(torch.softmax(q @ k.transpose(-2, -1) * 0.25, dim=-1))
        out = (weights @ v).transpose(1, 2).reshape(b, t, d)
        if self.gated:
            out = torch.cat([out, fused[..., d:]], dim=-1)  # the projection read whole too
        y = self.proj(out)
        y += x
        return y


def _lower(module, folder):
    case = lower_case(module.eval(), [(1, 16, 32)], folder)
    return case, verify_case(case)


@pytest.fixture(scope="module")
def forms(tmp_path_factory):
    """The block lowered with every pass, and without split_conv_outputs."""
    split = _lower(Attention(), tmp_path_factory.mktemp("split"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tosa.lowering, "TOSA_PASSES", tuple(
            p for p in tosa.lowering.TOSA_PASSES if p.name != "split_conv_outputs"))
        sliced = _lower(Attention(), tmp_path_factory.mktemp("sliced"))
    return split, sliced


def test_qkv_slices_become_one_convolution_each(forms):
    (split, report), (sliced, sliced_report) = forms
    assert report["passed"] and sliced_report["passed"]
    assert split.ops().count("SLICE") == 0 and sliced.ops().count("SLICE") == 3
    assert split.ops().count("CONV2D") == sliced.ops().count("CONV2D") + 2


@pytest.mark.parametrize("npu", ["ethos-u85-256", "ethos-u55-128"])
def test_fewer_cycles_same_macs(forms, npu, tmp_path):
    (split, _), (sliced, _) = forms
    family = npu.split("-")[1][:3]
    ours, theirs = (run_vela(case.variant(family), npu, tmp_path / name)
                    for name, case in (("split", split), ("sliced", sliced)))
    print(npu, "sliced", theirs["cycles_total"], "split", ours["cycles_total"])
    assert ours["cycles_total"] < theirs["cycles_total"]
    assert ours["nn_macs"] <= theirs["nn_macs"]


def test_a_projection_also_read_whole_is_left_alone(tmp_path):
    case, report = _lower(Attention(gated=True), tmp_path)
    assert report["passed"]
    assert case.ops().count("SLICE") >= 3
