"""A target with one failing model (issue 28 #15): without ``--continue`` the build stops at
the first failure and writes no target folder; with it, the models that built are written
and report.json / report.html mark the failed one with its error (pipeline/graph/partial.py).

Host targets (no Vela, no runtime build): the behaviour is the reporter's, not a backend's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pipeline.graph.partial import continuing
from tests.e2e.runner import doit

NET = '''\
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(16, 16)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu_(self.fc(x))
        h += x
        return self.head(self.drop(h))


class HuggingFaceStyle(Classifier):
    def forward(self, x):
        h = self.fc(x)
        return {"logits": self.head(h), "hidden": h}
'''
TARGETS = """\
models:
  good:
    source: net.py:Classifier
    inputs: [{name: features, shape: [1, 16]}]
    calibration: {samples: 2, seed: 1}
  dict_out:
    source: net.py:HuggingFaceStyle
    inputs: [{name: features, shape: [1, 16]}]
    calibration: {samples: 2, seed: 1}
targets:
  both: {cpu: host, npu: null, models: [good, dict_out]}
  alone: {cpu: host, npu: null, models: [good]}
"""
DICT_ERROR = ("both/export: forward() must return a tensor, or a tuple or list of tensors; got "
              "a dict (output['logits'], output['hidden'])")

pytestmark = [pytest.mark.slow, pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


@pytest.fixture(scope="module")
def builds(tmp_path_factory, module_canary) -> tuple[Path, tuple[subprocess.CompletedProcess, list[str]],
                                      subprocess.CompletedProcess]:
    """The same project built twice: fail-fast first (with what its build folder held
    then), then with --continue."""
    root = tmp_path_factory.mktemp("continue")
    (root / "net.py").write_text(NET)
    (root / "targets.yaml").write_text(TARGETS)
    fail_fast = doit(root, "build", "target=both", ok=False)
    written = sorted(p.name for p in (root / "build").iterdir() if not p.name.startswith("."))
    continued = doit(root, "--continue", "build", ok=False)
    return root, (fail_fast, written), continued


def test_without_continue_the_first_failure_stops_the_build(builds):
    _, (fail_fast, written), _ = builds
    output = fail_fast.stdout + fail_fast.stderr
    assert fail_fast.returncode != 0
    assert "Traceback" not in output
    assert DICT_ERROR in output
    assert written == []


def test_with_continue_the_models_that_built_are_written(builds):
    root, _, continued = builds
    output = continued.stdout + continued.stderr
    assert continued.returncode != 0, output  # the build still failed
    assert "Traceback" not in output
    both = root / "build" / "both"
    assert (both / "good" / "model.tosa").is_file(), output
    assert not (both / "dict_out").exists()
    report = json.loads((both / "report.json").read_text())
    assert report["failed"] == ["dict_out"]
    assert report["models"]["dict_out"]["failed"]["task"] == "export:dict_out"
    assert report["models"]["dict_out"]["failed"]["error"].startswith(DICT_ERROR)
    assert report["models"]["good"]["verify"]["passed"] is True
    assert "   both/dict_out: FAILED at export:dict_out" in continued.stdout
    # The target without a failure is built as always, and the page shows both.
    assert json.loads((root / "build" / "alone" / "report.json").read_text())["models"]["good"]
    page = (root / "build" / "report.html").read_text()
    assert "<td class=fail>FAILED</td>" in page and "output[&#x27;logits&#x27;]" in page


def test_nothing_outside_the_build_folder_and_the_store_is_touched(builds, module_canary):
    """A canary planted before both builds (issue 28): as it was after them."""
    _, _, check = module_canary
    check()


@pytest.mark.parametrize("argv, expected", [
    (["build"], False), (["--continue", "build"], True), (["-c", "build", "target=a"], True),
    (["--continue", "--no-continue", "build"], False), (["build", "target=-c"], False),
])
def test_continue_is_read_from_doit_arguments(argv, expected):
    assert continuing(argv) is expected
