"""A doit worker (``-n``) that dies inside a stage ends the build in one line naming the
stage (pipeline/graph/workers.py); doit itself would wait for its result for ever."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.graph.workers import RUNNING, died
from tests.e2e.runner import doit

NET = '''\
import os
import signal

import torch

os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would


class Net(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''


def test_a_marker_of_an_ended_process_is_a_stage_that_died(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    folder = tmp_path / RUNNING
    folder.mkdir()
    (folder / str(proc.pid)).write_text("t/export\nexport\n")
    (folder / str(os.getpid())).write_text("t/lower\nlower\n")  # alive: still running
    assert died(folder) == ("t/export", "export", "it ended")
    (folder / str(proc.pid)).unlink()
    assert died(folder) is None


@pytest.mark.needs_torch
def test_worker_killed_in_a_stage_ends_the_build_in_one_line(tmp_path: Path):
    (tmp_path / "net.py").write_text(NET)
    (tmp_path / "targets.yaml").write_text(
        "models:\n  m: {source: net.py:Net, inputs: [{name: x, shape: [1, 4]}]}\n"
        "targets:\n  t: {cpu: host, npu: null, models: [m]}\n")
    started = time.monotonic()
    proc = doit(tmp_path, "-n", "2", "build", ok=False, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "Traceback" not in output
    assert ("error: t/export: the export stage's process ended without reporting (killed by "
            "SIGKILL); the build was stopped") in proc.stderr
    assert time.monotonic() - started < 120
