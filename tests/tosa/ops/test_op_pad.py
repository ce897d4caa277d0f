"""PAD (a constant pad no conv2d absorbs) and the reflect / replicate / circular modes
(slices and a concat, pipeline/normalise/padding.py): reference model against torch."""

import json

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Pad(nn.Module):
    def __init__(self, pads, value=0.0, mode="constant"):
        super().__init__()
        self.pads, self.value, self.mode = pads, value, mode

    def forward(self, x):
        if self.mode != "constant":
            return nn.functional.pad(x, self.pads, mode=self.mode)
        return nn.functional.pad(x, self.pads, value=self.value)


class PadThenPool(nn.Module):
    def __init__(self, pads, value=0.0):
        super().__init__()
        self.pad = Pad(pads, value)

    def forward(self, x):
        return nn.functional.max_pool2d(self.pad(x), 2)


SHAPES = [
    pytest.param(Pad((1, 2, 3, 0)), (1, 3, 5, 6), id="nchw_hw_asymmetric"),
    pytest.param(PadThenPool((1, 1, 1, 1)), (1, 4, 6, 6), id="before_maxpool"),
    pytest.param(Pad((0, 0, 0, 0, 2, 1)), (1, 3, 4, 4), id="channels"),
    pytest.param(Pad((2, 3), value=0.25), (2, 7), id="rank2_value"),
]


@pytest.mark.parametrize("module, shape", SHAPES)
def test_pad_int8_matches_torch(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert case.ops()[0] == "PAD"


@pytest.mark.parametrize("dtype", [A16W8, FP])
def test_pad_other_types_match_torch(dtype, tmp_path):
    case, report = run_case(Pad((1, 1, 2, 0)), [(1, 2, 4, 4)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == ["PAD"]


class StyleBlock(nn.Module):
    """A style-transfer / super-resolution block as users write it: reflection padding before
    a conv, a residual with in-place add, replicate padding before a pool."""

    def __init__(self):
        super().__init__()
        self.pad = nn.ReflectionPad2d(1)
        self.conv = nn.Conv2d(4, 4, 3)
        self.edge = nn.ReplicationPad2d((0, 1, 0, 1))

    def forward(self, x):
        y = self.conv(self.pad(x))
        y += x
        return nn.functional.avg_pool2d(self.edge(torch.relu(y)), 2)


class CircularConv(nn.Module):
    """A conv over a periodic signal (panorama, angle bins): padding_mode='circular'."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=(0, 2), padding_mode="circular")

    def forward(self, x):
        return self.conv(x)


MODES = [
    pytest.param(Pad((2, 1, 1, 3), mode="reflect"), (1, 3, 5, 6), id="reflect_2d"),
    pytest.param(Pad((3, 2), mode="reflect"), (2, 4, 9), id="reflect_1d_audio"),
    pytest.param(Pad((1, 1, 2, 0), mode="replicate"), (1, 2, 4, 4), id="replicate_2d"),
    pytest.param(Pad((1, 1, 1, 1, 1, 1), mode="replicate"), (1, 2, 3, 4, 5), id="replicate_3d"),
    pytest.param(Pad((2, 2, 0, 1), mode="circular"), (1, 3, 4, 6), id="circular_2d"),
    pytest.param(StyleBlock(), (1, 4, 8, 8), id="style_block"),
    pytest.param(CircularConv(), (1, 3, 6, 10), id="circular_conv"),
]


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize("module, shape", MODES)
def test_reflect_replicate_circular_pads_are_slices_and_a_concat(module, shape, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    if dtype != FP:
        assert report["layers"][-1]["max_abs_diff_int"] <= 1
    assert "CONCAT" in case.ops() and "REVERSE" not in case.ops()


@pytest.mark.needs_vela
@pytest.mark.parametrize("accelerator", ["ethos-u55-128", "ethos-u85-256"])
def test_pad_modes_run_on_the_npus(accelerator, tmp_path):
    from pipeline.ethosu.vela import run_vela
    from pipeline.chain.vela import vela_args

    case, report = run_case(StyleBlock(), [(1, 4, 8, 8)], tmp_path)
    variant = case.variant(accelerator.split("-")[1])
    outputs = run_vela(variant, tmp_path / "vela", vela_args(accelerator), where="style_block")
    figures = json.loads(outputs["figures"].read_text())
    assert figures["npu_operators"] > 0 and figures["cpu_operators"] == 0
