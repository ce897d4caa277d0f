"""The roofline of a small network as a user writes it, compiled by the real Vela for
Ethos-U55-128 (Shared_Sram: weights stream from flash) and checked against figures computed
by hand from the layer shapes and the NPU's rates (pipeline/ethosu/roofline.py)."""

import json

import pytest
import torch
from torch import nn

from pipeline.chain.vela import npu_config
from pipeline.config.vela_ini import read_vela_ini
from pipeline.ethosu.vela import run_vela
from tests.tosa.lowering_cases import A16W8, INT8, lower_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_vela]


class Tagger(nn.Module):
    """conv -> in-place relu -> depthwise -> global mean -> dropout -> linear."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(8, 32, 3, padding=1)
        self.depthwise = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(32, 64)

    def forward(self, x):
        x = self.conv(x)
        x.relu_()
        x = self.depthwise(x)
        x = self.drop(x.mean(dim=(2, 3)))
        return self.head(x)


def _roofline(dtype: str, folder) -> dict:
    case = lower_case(Tagger().eval(), [(1, 8, 16, 16)], folder / "lowered", dtype)
    npu = npu_config("ethos-u55-128")
    mode = read_vela_ini(npu.config_file).memory_modes[npu.memory_mode]
    outputs = run_vela(case.variant(npu.variant), folder / "vela", npu.vela_args(),
                       where="test/vela", memory_mode=mode)
    return json.loads(outputs["roofline"].read_text())


@pytest.fixture(scope="module")
def int8(tmp_path_factory) -> dict:
    return _roofline(INT8, tmp_path_factory.mktemp("int8"))


def _layer(roofline: dict, line_text: str) -> dict:
    """The first NPU operation whose model line holds ``line_text``."""
    return next(x for x in roofline["layers"]
                if x["source"] and line_text in x["source"]["code"])


def test_u55_figures_are_vela_s_own(int8):
    assert (int8["accelerator"], int8["peak_macs_per_cycle"]) == ("Ethos_U55_128", 128)
    # Ethos_U55_High_End_Embedded: 8-byte AXI, flash at 1/8 of the clock; Shared_Sram.
    assert int8["bytes_per_cycle"]["Sram"] == 8.0 and int8["bytes_per_cycle"]["OffChipFlash"] == 1.0
    assert (int8["weights_in"], int8["feature_maps_in"]) == ("OffChipFlash", "Sram")


def test_convolution_bound_from_its_shapes(int8):
    conv = _layer(int8, "self.conv(x)")
    macs = 16 * 16 * 32 * (3 * 3 * 8)
    assert conv["operator"] == "Conv2D" and conv["macs"] == macs
    assert conv["mac_bound"] == macs / 128
    # Weights cross the flash (1 byte/cycle), feature maps the SRAM (8): separate ports.
    activations = (16 * 16 * 8 + 16 * 16 * 32) / 8
    assert conv["memory_bound"] == round(max(conv["weight_bytes"] / 1.0, activations), 1)
    assert conv["bound"] == max(conv["mac_bound"], conv["memory_bound"])
    assert 0 < conv["utilisation"] <= 1


def test_depthwise_cannot_reach_the_peak(int8):
    depthwise = next(x for x in int8["layers"] if x["operator"] == "DepthwiseConv2D"
                     and "self.depthwise(x)" in x["source"]["code"])
    assert depthwise["macs"] == 16 * 16 * 32 * 9
    assert depthwise["kind_bound"] == 8 * depthwise["mac_bound"]  # one lane of 8


def test_linear_layer_is_bound_by_weights_streaming_from_flash(int8):
    head = _layer(int8, "self.head(x)")
    assert head["macs"] == 32 * 64
    assert head["bound_by"] == "memory" and head["memory_bound_by"] == "OffChipFlash"
    assert head["memory_bound"] == head["weight_bytes"]  # 1 byte per cycle
    # every operation came from a line of this file: none guessed, none left out
    assert int8["unmapped_layers"] == 0
    assert {x["source"]["file"] for x in int8["layers"]} == {__file__}


@pytest.mark.slow
def test_sixteen_bit_activations_halve_the_mac_rate(tmp_path):
    conv = _layer(_roofline(A16W8, tmp_path), "self.conv(x)")
    assert conv["ifm_dtype"] == "int16"
    assert conv["mac_bound"] == conv["macs"] / 64
