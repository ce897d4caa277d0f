"""benchmarks/bench_vs_executorch.py without ExecuTorch: its --help and its model table."""

from __future__ import annotations

import ast
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
    for option in ("--models", "--npus", "--keep", "--json", "--end-to-end"):
        assert option in proc.stdout


def test_model_table_parses(bench):
    entries = bench.model_table()
    names = [e.name for e in entries]
    assert names[:2] == ["add", "cnn"]
    assert len(set(names)) == len(names)
    for entry in entries:
        assert entry.path.parent == ROOT / "models" and entry.path.suffix == ".py"
        assert entry.attr.isidentifier()


def test_model_table_names_classes_the_files_define(bench):
    """Every table entry whose file exists names a class of that file."""
    present = [e for e in bench.model_table() if e.path.is_file()]
    assert {"add", "cnn"} <= {e.name for e in present}
    for entry in present:
        tree = ast.parse(entry.path.read_text())
        defined = {node.name for node in tree.body
                   if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
        assert entry.attr in defined, f"{entry.path.name} must define {entry.attr}"


@pytest.mark.parametrize("text, message", [
    ("cnn models/cnn.py", "must be `name path Class`"),
    ("cnn elsewhere/cnn.py SmallCNN", "path must be models/*.py"),
    ("cnn models/cnn.py SmallCNN\ncnn models/cnn.py SmallCNN", "listed twice"),
])
def test_model_table_rejects_malformed_lines(bench, text, message):
    with pytest.raises(ValueError, match=message.replace("*", r"\*")):
        bench.model_table(text)


def test_missing_models_are_skipped_with_a_note(bench, capsys):
    entries = bench.select_models(None)
    printed = capsys.readouterr().out
    for entry in bench.model_table():
        if entry.path.is_file():
            assert entry in entries
        else:
            assert entry not in entries
            assert f"note: {entry.name} skipped" in printed
