"""``python -m pipeline.config`` (pipeline/config/__main__.py) and the cost of importing it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pipeline.config.__main__ import main

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parents[2]


def test_check_ok(capsys):
    assert main(["check", str(FIXTURES / "targets.yaml")]) == 0
    assert capsys.readouterr().out == "ok: 4 targets, 2 models\n"


def test_check_reports_every_problem(project, capsys):
    (project / "targets.yaml").write_text("models: {}\ntargets: {}\n")
    assert main(["check"]) == 1
    assert capsys.readouterr().err == (
        "2 problems in the configuration:\n"
        "targets.yaml:1: models: must define at least one model; got none\n"
        "targets.yaml:2: targets: must define at least one target; got none\n"
        "(see docs/targets.md)\n")


def test_schema_to_stdout_and_file(tmp_path, capsys):
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert main(["schema", "-o", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text()) == printed


def test_module_entry_point():
    result = subprocess.run([sys.executable, "-m", "pipeline.config", "check",
                             str(FIXTURES / "targets.yaml")], cwd=REPO, capture_output=True,
                            text=True, check=True)
    assert result.stdout == "ok: 4 targets, 2 models\n"


def test_import_and_load_stay_light():
    code = (
        "import sys\nfrom pathlib import Path\nfrom pipeline.config import load_config\n"
        f"load_config(Path({str(FIXTURES / 'targets.yaml')!r}))\n"
        "heavy = [m for m in ('torch', 'numpy', 'ethosu.vela', 'tosa_serializer') "
        "if m in sys.modules]\nassert not heavy, heavy\n")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
