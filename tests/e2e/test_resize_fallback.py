"""A segmentation model whose head resizes 32x32 features to 512x512 (16x, as torchvision's
DeepLabV3-MobileNetV3 does; torchvision is not installed here, so a library folder stands in
for it), built for Ethos-U55 with and without CPU fallback (issue 28 #13, #14):

- without fallback the vela stage fails in one message naming the user's wrapper line (not
  the library's resize, nor torch's) and saying that `npu: {fallback: cpu}` runs it;
- with fallback the RESIZE runs on the CPU and its QEMU check passes: the segment's output is
  1 MiB, past the 1 MiB IO staging buffer the firmware had before it was sized from the
  model's own IO (`IO staging needs 1052672 more bytes; ETHOSU_RT_IO_BYTES is 1048576`).

One `doit --continue` build of both targets.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.runner import doit

LIBRARY = '''\
import torch.nn.functional as F
from torch import nn


def _resize(features, size):
    return F.interpolate(features, size=size, mode="bilinear", align_corners=False)


class Segmenter(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Conv2d(3, 8, 3, stride=16, padding=1)
        self.classifier = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        out = self.classifier(F.relu(self.backbone(x)))
        return _resize(out, x.shape[-2:])
'''
WRAPPER = '''\
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib", "site-packages"))
from seglib import Segmenter  # noqa: E402


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.model = Segmenter()

    def forward(self, image):
        logits = self.model(image)
        return logits
'''
TARGETS = """\
models:
  seg:
    source: wrap.py:Wrapper
    inputs: [{name: image, shape: [1, 3, 512, 512]}]
    calibration: {samples: 2, seed: 1}
targets:
  u55: {cpu: cortex-m55, npu: {config: ethos-u55-128}, models: [seg]}
  u55-fallback: {cpu: cortex-m55, npu: {config: ethos-u55-128, fallback: cpu}, models: [seg]}
"""

pytestmark = [pytest.mark.slow, pytest.mark.needs_torch, pytest.mark.needs_vela,
              pytest.mark.needs_tosa_ref, pytest.mark.needs_arm_gcc, pytest.mark.needs_qemu]


@pytest.fixture(scope="module")
def built(tmp_path_factory, module_canary) -> tuple[Path, subprocess.CompletedProcess]:
    root = tmp_path_factory.mktemp("resize")
    (root / "lib" / "site-packages").mkdir(parents=True)
    (root / "lib" / "site-packages" / "seglib.py").write_text(LIBRARY)
    (root / "wrap.py").write_text(WRAPPER)
    (root / "targets.yaml").write_text(TARGETS)
    return root, doit(root, "--continue", "build", ok=False)


def test_without_fallback_the_error_names_the_users_line_and_the_fallback(built):
    root, proc = built
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in output
    wrapper = root / "wrap.py"
    assert (f"  upsample_bilinear2d @ {wrapper}:18 (logits = self.model(image)): TOSA RESIZE on "
            "ethos-u55-128 must upscale both axes by a power of two 2..8; got 32 to 512 and 32 "
            "to 512\n  Set `npu: {fallback: cpu}` on the target to run RESIZE on its CPU"
            ) in output, output
    assert "seglib" not in output and "functional.py" not in output
    report = json.loads((root / "build" / "u55" / "report.json").read_text())
    assert report["failed"] == ["seg"]


def test_with_fallback_the_resize_runs_on_the_cpu_past_1_mib_of_io(built):
    root, proc = built
    report = json.loads((root / "build" / "u55-fallback" / "report.json").read_text())
    entry = report["models"]["seg"]
    assert entry["verify"]["passed"], proc.stdout
    check = entry["mixed_verify"]
    assert check["passed"] and [s["operators"] for s in check["segments"]] == [["RESIZE"]]
    # every test sample's 4x512x512 int8 output: 1 MiB each
    assert check["segments"][0]["outputs"][0]["values"] == check["samples"] * 4 * 512 * 512


def test_nothing_outside_the_build_folder_and_the_store_is_touched(built, module_canary):
    """A canary planted before both builds (issue 28): as it was after them."""
    _, _, check = module_canary
    check()
