"""replace_channel_affine: on Ethos-U55/U65 a per-channel multiply or add by a constant
becomes a depthwise 1x1 convolution. A RepViT/FastViT-like block as users write it (BatchNorm
after a residual add, a layer scale, ``x * gamma + beta``, in-place ops, dropout) lowered with
and without the pass: the U55 variant has no MUL or ADD of a constant left, verification (TOSA
reference model against torch, per layer, every variant) passes, and the real Vela counts
fewer cycles on Ethos-U55-128 and -U65-256; the U85 variant keeps the MULs, and so does a
map too small for the depthwise form to pay on Ethos-U65."""

import numpy as np
import pytest
import torch
from torch import nn

from pipeline.tosa import passes
from pipeline.tosa.passes import replace_channel_affine_pass
from tests.tosa.lowering_cases import lower_case, run_vela, verify_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref, pytest.mark.needs_vela]


class RepBlock(nn.Module):
    """Token mixer (depthwise 3x3 + residual, then BatchNorm: no convolution to fold it
    into), channel mixer with a layer scale, and a per-channel affine on the way out."""

    def __init__(self, channels=48):
        super().__init__()
        torch.manual_seed(0)
        self.mixer = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.norm = nn.BatchNorm2d(channels)
        self.mlp = nn.Conv2d(channels, channels, 1)
        self.drop = nn.Dropout(0.1)
        self.gamma = nn.Parameter(torch.rand(channels, 1, 1) + 0.5)
        self.beta = nn.Parameter(torch.randn(channels, 1, 1) * 0.1)
        self.norm.running_mean.uniform_(-0.5, 0.5)
        self.norm.running_var.uniform_(0.5, 2.0)
        self.norm.weight.data.uniform_(0.5, 1.5)
        self.norm.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        y = self.mixer(x)
        y += x
        y = self.norm(y)
        z = self.drop(self.mlp(y).relu_())
        z = self.gamma * z
        z += y
        return z * self.gamma + self.beta


def _lower(folder):
    case = lower_case(RepBlock().eval(), [(1, 48, 28, 28)], folder)
    return case, verify_case(case)


@pytest.fixture(scope="module")
def forms(tmp_path_factory):
    """The block lowered with every pass, and without replace_channel_affine."""
    replaced = _lower(tmp_path_factory.mktemp("replaced"))
    without = tuple(p for p in passes.NPU_VARIANTS["u55"] if p.name != "replace_channel_affine")
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(passes.NPU_VARIANTS, "u55", without)
        kept = _lower(tmp_path_factory.mktemp("kept"))
    return replaced, kept


def _ops(path):
    from pipeline.tosa.flatbuffer import operator_names

    return operator_names(path)


def test_the_u55_variant_has_no_constant_mul_or_add_and_verifies(forms):
    (case, report), (kept, kept_report) = forms
    assert report["passed"] and kept_report["passed"]
    ops, before = _ops(case.variant("u55")), _ops(kept.variant("u55"))
    assert "MUL" not in ops and before.count("MUL") == 3
    assert ops.count("ADD") == 2  # the two residual adds of two tensors stay
    assert ops.count("DEPTHWISE_CONV2D") == before.count("DEPTHWISE_CONV2D") + 5
    assert _ops(case.variant("u85")).count("MUL") == 3  # cheaper there as it is


@pytest.mark.parametrize("npu", ["ethos-u55-128", "ethos-u65-256"])
def test_fewer_cycles_on_u55_and_u65(forms, npu, tmp_path):
    (case, _), (kept, _) = forms
    ours, theirs = (run_vela(c.variant("u55"), npu, tmp_path / name)
                    for name, c in (("replaced", case), ("kept", kept)))
    print(npu, "MUL/ADD", theirs["cycles_total"], "depthwise", ours["cycles_total"])
    assert ours["cycles_total"] < theirs["cycles_total"]


def test_a_small_map_keeps_its_mul_and_add(tmp_path):
    """Below MIN_ELEMENTS Ethos-U65 (which compiles the U55 variant) is faster as it was."""
    case = lower_case(RepBlock(64).eval(), [(1, 64, 4, 4)], tmp_path)
    assert 64 * 4 * 4 < replace_channel_affine_pass.MIN_ELEMENTS
    assert _ops(case.variant("u55")).count("MUL") == 3


def test_a_line_no_weight_can_draw_is_left_alone():
    """A channel whose 256 output codes lie on no line (here a parabola) has no fit: the pass
    then leaves the operators as they are."""
    codes = replace_channel_affine_pass.CODES
    target = np.clip((codes * codes) // 256 - 64, -128, 127)
    candidates = replace_channel_affine_pass._candidates(0.5, 3.0, [])
    assert replace_channel_affine_pass._fit(target, 0, 0, -128, 127, False, candidates) is None


def test_a_channel_multiplied_by_zero_is_its_bias():
    codes = replace_channel_affine_pass.CODES
    target = np.full(codes.shape, 7)
    weight, bias, multiplier, shift = replace_channel_affine_pass._fit(
        target, -3, 5, -128, 127, False, iter(()))
    assert weight == 0
    assert (bias * multiplier + (1 << (shift - 1))) >> shift == 2  # 7 - the output zero point
