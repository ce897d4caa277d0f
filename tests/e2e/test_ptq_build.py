"""End to end: a model that turns on the post-training techniques, through `doit build`."""

from __future__ import annotations

import json

import pytest

from tests.e2e.runner import doit

pytestmark = [pytest.mark.slow, pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

MODEL = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.dw = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.pw = nn.Conv2d(channels, channels, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu_(self.bn1(self.dw(x)))
        y = self.bn2(self.pw(y))
        y += x
        return torch.relu_(y)


class KwsNet(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU(inplace=True))
        self.blocks = nn.Sequential(Block(16), Block(16))
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(16, 6)
        for bn in self.modules():
            if isinstance(bn, nn.BatchNorm2d):
                bn.weight.data.uniform_(0.3, 2.0)
                bn.bias.data.normal_(0.5, 0.5)
                bn.running_mean.normal_(0, 0.2)
                bn.running_var.uniform_(0.5, 2.0)
        self.eval()

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(self.drop(x.mean((2, 3))))
"""

TARGETS = """\
models:
  kws:
    source: kws.py:KwsNet
    inputs: [{name: mfcc, shape: [1, 1, 24, 12]}]
    calibration: {samples: 8, seed: 1, equalization: true, bias_correction: true}
targets:
  host:
    cpu: host
    npu: null
    models: [kws]
"""


def test_equalised_and_bias_corrected_model_builds_verifies_and_reports(tmp_path):
    (tmp_path / "kws.py").write_text(MODEL)
    (tmp_path / "targets.yaml").write_text(TARGETS)
    doit(tmp_path, "build")
    report = json.loads(next((tmp_path / "build").glob("host/report.json")).read_text())
    entry = report["models"]["kws"]
    assert entry["verify"]["passed"]
    quantize = entry["quantize"]
    # dw -> pw in each block; not stem -> dw (the stem's output also feeds a residual)
    assert quantize["equalization"]["pairs"] == 2
    assert quantize["bias_correction"] == {"layers": 6, "biases_added": 0}
    sqnr = quantize["calibration_sqnr_db"]
    assert sqnr["with"] > 20 and sqnr["without"] > 20
