"""Run-time imports of a model file are inputs too (``pipeline/graph/loaded.py``).

A helper reached through ``importlib`` is invisible to the plan's import scan; the export
stage records it, the store keys on it and doit's up-to-date check re-checks it. And two
models whose folders each hold a ``blocks.py`` get their own, even in one doit process.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.graph.loaded import is_local, recording_local_modules
from tests.e2e.runner import doit

MODEL = '''\
import importlib

import torch
from torch import nn

blocks = importlib.import_module("bl" + "ocks")  # the plan's import scan cannot see this


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        y = self.fc(x)
        y += blocks.SHIFT
        return self.drop(torch.relu(y))


def make():
    torch.manual_seed(0)
    return Net()
'''
TARGETS = '''\
models:
  a: {source: a/net.py:make, inputs: [{name: x, shape: [1, 8]}], calibration: {samples: 2}}
  b: {source: b/net.py:make, inputs: [{name: x, shape: [1, 8]}], calibration: {samples: 2}}
targets:
  host: {cpu: cortex-a55, npu: null, quantization: none, tosa: TOSA-1.0+FP, models: [a, b]}
'''


def exported(project: Path, model: str) -> bytes:
    return (project / "build" / ".stages" / "export" / model / "model.pt2").read_bytes()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for model, shift in (("a", 2.0), ("b", 3.0)):
        (tmp_path / model).mkdir()
        (tmp_path / model / "net.py").write_text(MODEL)
        (tmp_path / model / "blocks.py").write_text(f"SHIFT = {shift}\n")
    (tmp_path / "targets.yaml").write_text(TARGETS)
    return tmp_path


@pytest.mark.slow
@pytest.mark.needs_torch
def test_run_time_imports_key_the_export_and_rerun_it(project):
    doit(project, "export")
    a_before, b_before = exported(project, "a"), exported(project, "b")
    assert a_before != b_before  # each model got its own blocks.py in one process
    (project / "a" / "blocks.py").write_text("SHIFT = 5.0\n")
    proc = doit(project, "export")
    assert "(imported by the model at run time) changed" in proc.stderr
    assert "export:a: built in" in proc.stdout and "export:b" not in proc.stdout.replace(
        "-- export:b", "")
    a_edited = exported(project, "a")
    assert a_edited != a_before
    shutil.rmtree(project / "build")  # the store must not hand back the old export
    doit(project, "export")
    assert exported(project, "a") == a_edited
    (project / "a" / "blocks.py").write_text("SHIFT = 2.0\n")
    proc = doit(project, "export")
    assert "export:a: restored from store" in proc.stdout
    assert exported(project, "a") == a_before


def test_recording_finds_local_modules_and_forgets_them(tmp_path, monkeypatch):
    (tmp_path / "helper_mod_for_test.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with recording_local_modules() as loaded:
        import helper_mod_for_test  # noqa: F401
        import json.tool  # noqa: F401  (the standard library is not local)
    assert loaded == [(tmp_path / "helper_mod_for_test.py").resolve()]
    assert "helper_mod_for_test" not in sys.modules
    assert not is_local(subprocess.__file__) and not is_local(pytest.__file__)
