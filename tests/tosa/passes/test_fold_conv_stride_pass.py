"""fold_conv_stride: a strided convolution over few input channels reads groups of ``stride``
columns as channels. The stems users write (a keyword spotter's 1-channel 10x4 convolution
with uneven padding, an RGB 3x3 stride-2 stem, a stride-4 patch stem with no padding), each
with BatchNorm and an in-place ReLU, lowered with and without the pass: verification (TOSA
reference model against torch, per layer, every variant) passes, the U85 variant's
convolutions have stride 1 along W and the real Vela counts fewer cycles on Ethos-U85-256;
the U55/U65 variant keeps the strides (slower on Ethos-U65 folded)."""

import pytest
import torch
from torch import nn

from pipeline.tosa import passes
from pipeline.tosa.flatbuffer import read_block
from tests.tosa.lowering_cases import lower_case, run_vela, verify_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref, pytest.mark.needs_vela]


class Stems(nn.Module):
    """Three stems on one input, their outputs pooled and added (``+=``)."""

    def __init__(self, channels):
        super().__init__()
        torch.manual_seed(0)
        self.kws = nn.Conv2d(channels, 16, (10, 4), stride=2, padding=(4, 1), bias=False)
        self.rgb = nn.Conv2d(channels, 16, 3, stride=2, padding=1)
        self.patch = nn.Conv2d(channels, 16, 4, stride=4)
        self.norm = nn.BatchNorm2d(16)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        a = self.norm(self.kws(x)).relu_()
        b = self.rgb(x).relu_()
        c = self.drop(self.patch(x))
        y = a.mean((2, 3))
        y += b.mean((2, 3))
        y += c.amax((2, 3))
        return y


CASES = {"mono": (1, 48, 16), "rgb": (3, 32, 32)}


def _lower(name, folder):
    channels, h, w = CASES[name]
    case = lower_case(Stems(channels).eval(), [(1, channels, h, w)], folder)
    return case, verify_case(case)


@pytest.fixture(scope="module", params=sorted(CASES))
def forms(request, tmp_path_factory):
    """One input kind lowered with every pass, and without fold_conv_stride."""
    folded = _lower(request.param, tmp_path_factory.mktemp("folded"))
    without = tuple(p for p in passes.NPU_VARIANTS["u85"] if p.name != "fold_conv_stride")
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(passes.NPU_VARIANTS, "u85", without)
        kept = _lower(request.param, tmp_path_factory.mktemp("kept"))
    return folded, kept


def _strides(path):
    return sorted(tuple(op.attrs["stride"]) for op in read_block(path).operators
                  if op.op == "CONV2D")


def test_every_stem_reads_column_groups_and_verifies(forms):
    (case, report), (kept, kept_report) = forms
    assert report["passed"] and kept_report["passed"]
    assert _strides(kept.variant("u85")) == [(2, 2), (2, 2), (4, 4)]
    assert _strides(case.variant("u85")) == [(2, 1), (2, 1), (4, 1)]
    assert _strides(case.tosa) == _strides(case.variant("u55")) == [(2, 2), (2, 2), (4, 4)]


def test_fewer_cycles_on_u85(forms, tmp_path):
    (case, _), (kept, _) = forms
    ours, theirs = (run_vela(c.variant("u85"), "ethos-u85-256", tmp_path / name)
                    for name, c in (("folded", case), ("kept", kept)))
    print("ethos-u85-256 strided", theirs["cycles_total"], "folded", ours["cycles_total"])
    assert ours["cycles_total"] < theirs["cycles_total"]


def test_many_channels_keep_their_stride(tmp_path):
    """A strided convolution over more than MAX_CHANNELS channels uses the array already."""
    module = nn.Sequential(nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU(inplace=True))
    case = lower_case(module.eval(), [(1, 16, 16, 16)], tmp_path)
    assert _strides(case.variant("u85")) == [(2, 2)]
