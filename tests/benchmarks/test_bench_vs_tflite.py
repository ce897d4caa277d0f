"""benchmarks/bench_vs_tflite.py (the package benchmarks/vs_tflite/) without litert-torch: its
--help, its imports, what it says where litert-torch is missing, and its table and geomeans on
rows shaped as the comparison makes them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.vs_tflite import cli

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_vs_tflite.py"


def test_modules_import_the_standard_library_only():
    """--help and these tests must run where neither torch nor litert-torch imports."""
    code = ("import sys, benchmarks.vs_tflite.cli, benchmarks.vs_tflite.theirs, "
            "benchmarks.vs_tflite.env\n"
            "heavy = sorted(m for m in ('torch', 'litert_torch', 'numpy', 'pipeline') "
            "if m in sys.modules)\n"
            "assert not heavy, heavy")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_help_runs_without_litert():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True,
                          text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: bench_vs_tflite.py")
    for option in ("--targets", "--models", "--npus", "--repeat", "--keep", "--json"):
        assert option in proc.stdout


def test_without_litert_it_says_how_to_make_the_environment(monkeypatch, capsys):
    """In .venv (no litert-torch): exit 2 with one line naming the setup script. The re-run in
    .venv-litert is switched off (mocked: that venv may exist here and would run the bench)."""
    from benchmarks.vs_tflite.env import litert_problem

    assert litert_problem() == "litert-torch is not installed"
    monkeypatch.setattr(cli, "reexec_in_litert_venv", lambda: None)
    assert cli.main(["--models", "cnn"]) == 2
    err = capsys.readouterr().err
    assert "cannot run litert-torch" in err and "litert-torch is not installed" in err
    assert "benchmarks/setup_litert.sh" in err


def _row(model: str, npu: str, ours: int, theirs: int | None, share: float = 1.0) -> dict:
    return {"model": model, "npu": npu,
            "ours": {"cycles_npu": ours, "npu_share": 1.0, "sqnr_torch_db": 40.0, "error": None},
            "theirs": {"cycles_npu": theirs, "npu_share": share, "layout": "nhwc",
                       "cpu_ops": int(share < 1), "cpu_op_types": ["ADD"] if share < 1 else [],
                       "by_layout": {"nchw": theirs and theirs + 10, "nhwc": theirs},
                       "sqnr_torch_db": 39.0, "error": None if theirs else "boom"}}


def test_table_and_geomeans_per_npu(capsys):
    rows = [_row("a", "ethos-u55-128", 80, 100), _row("b", "ethos-u55-128", 125, 100),
            _row("c", "ethos-u55-128", 50, 100, share=0.9), _row("d", "ethos-u55-128", 1, None)]
    summary = cli.print_table(rows, ["ethos-u55-128"])
    out = capsys.readouterr().out
    assert "| a | ethos-u55-128 | 80 | 100 | 0.80 | 100% / 100% | nhwc |" in out
    assert "| c | ethos-u55-128 | 50 | 100 | 0.50 | 100% / 90% | nhwc |" in out
    assert "| a | ethos-u55-128 | 110 | 100 | 40.0 / 39.0 |" in out
    assert "- d/ethos-u55-128 theirs: boom" in out
    assert "- c/ethos-u55-128 TFLite: Vela left ADD on the CPU" in out
    u55 = summary["ethos-u55-128"]
    assert u55["rows"] == 3 and abs(u55["geomean"] - (0.8 * 1.25 * 0.5) ** (1 / 3)) < 1e-12
    assert u55["rows_all_theirs_on_npu"] == 2 and abs(u55["geomean_all_theirs_on_npu"] - 1) < 1e-12
    assert u55["worse_than_theirs"] == ["b (1.25)"]
    assert all(len(line) <= 120 for line in out.splitlines() if line.startswith("|"))


def test_recorded_cycles_come_from_a_baseline_or_a_zoo_run(tmp_path):
    """--ours-cycles: benchmarks/zoo_cycles.json's format, or bench_real_models.py --json's."""
    import json

    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"cycles": {"m5": {"ethos-u55-128": 7}}}))
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"m5": {"blocker": None, "vela": {"ethos-u85-256": {
        "cycles_npu": 9}}}, "bert": {"blocker": "x", "vela": {}}}))
    assert cli._recorded(baseline) == {"m5": {"ethos-u55-128": 7}}
    assert cli._recorded(run) == {"m5": {"ethos-u85-256": 9}}
