"""The zoo's cycle check (benchmarks/zoo_cycles.py, bench_real_models.py --check-cycles): the
comparison against the baseline and the command's exit status, on results shaped as
models/zoo/runner.build_model returns them (read back with --results, no build)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import zoo_cycles

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_real_models.py"


def _built(**cycles: int) -> dict:
    """A build_model result that built for each NPU given (key: npu with '_' for '-')."""
    return {"blocker": None, "stage": None, "verify": {"passed": True},
            "vela": {npu.replace("_", "-"): {"cycles_npu": n, "npu_op_share": 1.0}
                     for npu, n in cycles.items()}}


def _blocked(stage: str, message: str) -> dict:
    return {"blocker": message, "stage": stage, "verify": None, "vela": {}}


BASELINE = {"vela": "5.2.0", "tolerance_pct": 1.0, "cycles": {
    "repvit": {"ethos-u55-128": 1_000_000, "ethos-u85-256": 400_000},
    "m5": {"ethos-u55-128": 50_000},
}}


def test_a_slower_row_regresses_with_its_figures_and_a_faster_one_is_a_note():
    results = {"repvit": _built(ethos_u55_128=1_280_000, ethos_u85_256=390_000)}
    verdict = zoo_cycles.check(BASELINE, results, tolerance_pct=1.0)
    assert verdict.regressed == [("repvit on ethos-u55-128: 1,280,000 NPU cycles, baseline "
                                 "1,000,000 (+28.0%, tolerance 1%)")]
    assert verdict.notes == [("faster: repvit on ethos-u85-256: 390,000 NPU cycles, baseline "
                             "400,000 (-2.5%, tolerance 1%); --update-cycles records it")]


def test_within_tolerance_passes_and_models_not_run_are_not_checked():
    results = {"repvit": _built(ethos_u55_128=1_009_999, ethos_u85_256=400_000)}
    verdict = zoo_cycles.check(BASELINE, results, tolerance_pct=1.0)
    assert verdict.regressed == [] and verdict.notes == []  # m5 was not run: not checked


def test_a_model_that_no_longer_builds_regresses_on_every_npu_of_its_baseline():
    results = {"repvit": _blocked("lower", "repvit/lower: TOSA RESCALE must ...\nmore")}
    verdict = zoo_cycles.check(BASELINE, results, tolerance_pct=1.0)
    assert verdict.regressed == [
        ("repvit on ethos-u55-128: no longer built (blocked at lower: repvit/lower: TOSA "
        "RESCALE must ...); baseline 1,000,000 NPU cycles"),
        ("repvit on ethos-u85-256: no longer built (blocked at lower: repvit/lower: TOSA "
        "RESCALE must ...); baseline 400,000 NPU cycles")]


def test_update_replaces_rows_run_keeps_the_rest_and_never_drops_a_blocked_model():
    results = {"repvit": _blocked("vela", "x"), "m5": _built(ethos_u55_128=48_000),
               "new": _built(ethos_u85_256=7)}
    data = zoo_cycles.updated(BASELINE, results, "5.2.0")
    assert data["cycles"] == {"m5": {"ethos-u55-128": 48_000},
                              "new": {"ethos-u85-256": 7},
                              "repvit": BASELINE["cycles"]["repvit"]}
    assert (data["vela"], data["tolerance_pct"]) == ("5.2.0", 1.0)


def test_a_malformed_baseline_is_one_line(tmp_path):
    path = tmp_path / "zoo_cycles.json"
    path.write_text(json.dumps({"cycles": {"m5": {"ethos-u55-128": "fast"}}}))
    with pytest.raises(SystemExit, match=r"zoo_cycles.json: must hold \"cycles\": "
                                         r"\{model: \{npu config: int\}\}; got"):
        zoo_cycles.load(path)


def test_the_checked_in_baseline_loads_and_names_zoo_models():
    from models.zoo.runner import model_names

    data = zoo_cycles.load(zoo_cycles.BASELINE)
    assert data["cycles"], "benchmarks/zoo_cycles.json must record the zoo's cycles"
    assert set(data["cycles"]) <= set(model_names())
    assert {npu for row in data["cycles"].values() for npu in row} == {"ethos-u55-128",
                                                                       "ethos-u85-256"}


def _run(tmp_path: Path, results: dict, *options: str) -> subprocess.CompletedProcess:
    (tmp_path / "results.json").write_text(json.dumps(results))
    return subprocess.run([sys.executable, str(SCRIPT), "--results", str(tmp_path / "results.json"),
                           "--baseline", str(tmp_path / "baseline.json"), *options],
                          capture_output=True, text=True, check=False, timeout=60, cwd=ROOT)


def test_the_command_fails_with_one_line_per_regressed_row_then_update_makes_it_pass(tmp_path):
    (tmp_path / "baseline.json").write_text(json.dumps(BASELINE))
    slower = {"repvit": _built(ethos_u55_128=1_150_000, ethos_u85_256=400_000),
              "m5": _built(ethos_u55_128=60_000)}
    proc = _run(tmp_path, slower, "--check-cycles")
    assert proc.returncode == 1, proc.stderr
    regressed = [line for line in proc.stdout.splitlines() if line.startswith("REGRESSED")]
    assert regressed == [
        ("REGRESSED repvit on ethos-u55-128: 1,150,000 NPU cycles, baseline 1,000,000 "
        "(+15.0%, tolerance 1%)"),
        ("REGRESSED m5 on ethos-u55-128: 60,000 NPU cycles, baseline 50,000 (+20.0%, "
        "tolerance 1%)")]
    assert "2 of 3 (model, NPU) rows slower" in proc.stdout

    assert _run(tmp_path, slower, "--check-cycles", "--tolerance", "25").returncode == 0
    assert _run(tmp_path, slower, "--update-cycles").returncode == 0
    proc = _run(tmp_path, slower, "--check-cycles")
    assert proc.returncode == 0 and "0 of 3" in proc.stdout, proc.stdout
