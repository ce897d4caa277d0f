"""benchmarks/bench_vs_executorch.py without ExecuTorch: its --help and how it reads models."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_vs_executorch.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_vs_executorch", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)  # module level imports the standard library only
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_help_runs_without_executorch():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True,
                          text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: bench_vs_executorch.py")
    for option in ("--targets", "--models", "--npus", "--keep", "--json", "--end-to-end",
                   "--observers", "--sqnr-inputs", "--sqnr-only"):
        assert option in proc.stdout


def test_models_come_from_a_targets_file(bench):
    entries = bench.model_entries(ROOT / "targets.yaml")
    names = [e.name for e in entries]
    assert names[:2] == ["add", "cnn"]
    cnn = entries[1]
    assert (cnn.path, cnn.attr) == (ROOT / "models" / "cnn.py", "SmallCNN")
    assert cnn.inputs[0]["shape"] == [1, 3, 32, 32] and cnn.factory is None
    assert cnn.calibration["samples"] == 16 and cnn.observer == "mse"  # the default


def test_any_targets_file_and_its_observer(bench, tmp_path):
    (tmp_path / "net.py").write_text("import torch\nclass Net(torch.nn.Module):\n"
                                     "    def forward(self, x):\n        return x\n"
                                     "def draw():\n    return torch.rand(1, 4)\n")
    (tmp_path / "t.yaml").write_text(
        "models:\n  net: {source: net.py:Net, inputs: net.py:draw, seed: 3,\n"
        "        calibration: {samples: 4, observer: minmax}}\n"
        "targets:\n  t: {cpu: host, npu: null, models: [net]}\n")
    (entry,) = bench.select_models(tmp_path / "t.yaml", "net")
    assert entry.factory == (tmp_path / "net.py", "draw") and entry.inputs == ()
    assert (entry.seed, entry.observer, entry.calibration["samples"]) == (3, "minmax", 4)
    assert entry.export_options()["input_factory"] == (tmp_path / "net.py", "draw")


def test_unknown_model_names_are_refused_with_the_list(bench):
    with pytest.raises(SystemExit, match=r"--models must name models of .*targets.yaml "
                                         r"\(add, cnn, .*\); got nope"):
        bench.select_models(ROOT / "targets.yaml", "cnn,nope")


def test_the_end_to_end_targets_file_loads(bench, tmp_path):
    """The scratch targets file of --end-to-end holds the models as the user's file has them."""
    from pipeline.config import load_config

    entries = bench.select_models(ROOT / "targets.yaml", "add,cnn")
    path = tmp_path / "targets.yaml"
    path.write_text(bench._scratch_targets_yaml(entries, ["ethos-u55-128", "ethos-u85-256"]))
    config = load_config(path)
    assert list(config.models) == ["add", "cnn"]
    assert config.models["cnn"].calibration.observer == "mse"
    assert set(config.targets) == {"ethos-u55-128", "ethos-u85-256"}
