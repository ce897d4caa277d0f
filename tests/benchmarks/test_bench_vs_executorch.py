"""benchmarks/bench_vs_executorch.py (the package benchmarks/vs_executorch/) without
ExecuTorch: its --help, its imports, and how it reads models."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.vs_executorch import end_to_end, models

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_vs_executorch.py"


def test_modules_import_the_standard_library_only():
    """--help and these tests must run where neither torch nor ExecuTorch imports."""
    code = ("import sys, benchmarks.vs_executorch.cli as c, benchmarks.vs_executorch.run, "
            "benchmarks.vs_executorch.report, benchmarks.vs_executorch.end_to_end\n"
            "heavy = sorted(m for m in ('torch', 'executorch', 'numpy', 'pipeline') "
            "if m in sys.modules)\n"
            "assert not heavy, heavy")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_help_runs_without_executorch():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True,
                          text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: bench_vs_executorch.py")
    for option in ("--targets", "--models", "--npus", "--keep", "--json", "--end-to-end",
                   "--observers", "--sqnr-inputs", "--sqnr-only"):
        assert option in proc.stdout


def test_models_come_from_a_targets_file():
    entries = models.model_entries(ROOT / "targets.yaml")
    names = [e.name for e in entries]
    assert names[:2] == ["add", "cnn"]
    cnn = entries[1]
    assert (cnn.path, cnn.attr) == (ROOT / "models" / "cnn.py", "SmallCNN")
    assert cnn.inputs[0]["shape"] == [1, 3, 32, 32] and cnn.factory is None
    assert cnn.calibration["samples"] == 16 and cnn.observer == "mse"  # the default


def test_any_targets_file_and_its_observer(tmp_path):
    (tmp_path / "net.py").write_text("import torch\nclass Net(torch.nn.Module):\n"
                                     "    def forward(self, x):\n        return x\n"
                                     "def draw():\n    return torch.rand(1, 4)\n")
    (tmp_path / "t.yaml").write_text(
        "models:\n  net: {source: net.py:Net, inputs: net.py:draw, seed: 3,\n"
        "        calibration: {samples: 4, observer: minmax}}\n"
        "targets:\n  t: {cpu: host, npu: null, models: [net]}\n")
    (entry,) = models.select_models(tmp_path / "t.yaml", "net")
    assert entry.factory == (tmp_path / "net.py", "draw") and entry.inputs == ()
    assert (entry.seed, entry.observer, entry.calibration["samples"]) == (3, "minmax", 4)
    assert entry.export_options()["input_factory"] == (tmp_path / "net.py", "draw")


def test_unknown_model_names_are_refused_with_the_list():
    with pytest.raises(SystemExit, match=r"--models must name models of .*targets.yaml "
                                         r"\(add, cnn, .*\); got nope"):
        models.select_models(ROOT / "targets.yaml", "cnn,nope")


def test_the_end_to_end_targets_file_loads(tmp_path):
    """The scratch targets file of --end-to-end holds the models as the user's file has them."""
    from pipeline.config import load_config

    entries = models.select_models(ROOT / "targets.yaml", "add,cnn")
    path = tmp_path / "targets.yaml"
    path.write_text(end_to_end.scratch_targets_yaml(entries, ["ethos-u55-128", "ethos-u85-256"]))
    config = load_config(path)
    assert list(config.models) == ["add", "cnn"]
    assert config.models["cnn"].calibration.observer == "mse"
    assert set(config.targets) == {"ethos-u55-128", "ethos-u85-256"}
