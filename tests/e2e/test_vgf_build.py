"""End to end: every example model through the vgf-fp and vgf-int8 targets with `doit build`,
the real torch, tosa-tools, ML SDK model converter, scenario runner, emulation layer and lavapipe.

One module-scoped project, built once per target into one store; the tests read its outputs.
Calibration is short (4 samples, min/max, no bias correction): the run check does not care how
good the quantization is, only that the .vgf computes what the TOSA reference model computes.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pipeline.cache.store import Store
from pipeline.errors import UserError, VerificationError
from pipeline.graph.alongside import jobs_allowed
from pipeline.vgf.convert import tool
from pipeline.vgf.check import run_check
from pipeline.vgf.vulkan import vulkan_environment
from pipeline.verify.reference_model import run_reference_model
from models.cases.networks import CALIBRATION, MODELS  # every network of models/
from tests.e2e.runner import doit, doit_argv, executed, seeded_store

pytestmark = [pytest.mark.slow, pytest.mark.needs_torch, pytest.mark.needs_tosa_ref,
              pytest.mark.needs_vulkan]

TARGETS = "models:\n" + "".join(
    f"  {name}: {{source: {spec}, calibration: {CALIBRATION}}}\n" for name, spec in MODELS.items()
) + f"""defaults:
  models: [{', '.join(MODELS)}]
targets:
  vgf-fp: {{cpu: cortex-a55, tosa: TOSA-1.0+FP, quantization: none, vgf: {{}}}}
  vgf-int8: {{cpu: cortex-a55, vgf: {{}}}}
  vgf-a16w8: {{cpu: cortex-a55, quantization: a16w8, vgf: {{}}, models: [add, transformer]}}
  u85-add: {{cpu: cortex-m85, npu: {{config: ethos-u85-256}}, models: [add]}}
"""
INT_LOWER = "lower:add/int8/TOSA-1.0+INT+int16"


@pytest.fixture(scope="module")
def project(new_project) -> Path:
    root = new_project("vgf-project", TARGETS)
    for target in ("vgf-fp", "vgf-int8", "vgf-a16w8"):
        proc = doit(root, "build", f"target={target}")
        (root / f"{target}.log").write_text(proc.stdout)
    return root


def report(project: Path, target: str) -> dict:
    return json.loads((project / "build" / target / "report.json").read_text())


@pytest.mark.parametrize("model", list(MODELS))
def test_int8_vgf_is_bit_exact_with_the_reference_model(project, model):
    check = report(project, "vgf-int8")["models"][model]["run_check"]
    assert check["passed"] and check["tolerance"] == "INT: bit-exact" and check["samples"] == 4
    for output in check["outputs"]:
        assert output["exact_fraction"] == 1.0 and output["max_abs_diff"] == 0.0, output


@pytest.mark.parametrize("model", ["add", "transformer"])
def test_a16w8_vgf_is_bit_exact_with_the_reference_model(project, model):
    """int16 activations (i48 accumulators, int16 TABLEs for the transformer's exp/rsqrt/erf)."""
    entry = report(project, "vgf-a16w8")["models"][model]
    check = entry["run_check"]
    assert check["passed"] and check["tolerance"] == "INT: bit-exact" and check["samples"] == 4
    assert {i["dtype"] for i in json.loads(Path(entry["vgf"]["scenario"]).with_name(
        "vgf_io.json").read_text())["inputs"]} == {"int16"}
    for output in check["outputs"]:
        assert output["dtype"] == "int16"
        assert output["exact_fraction"] == 1.0 and output["max_abs_diff"] == 0.0, output


@pytest.mark.parametrize("model", list(MODELS))
def test_fp_vgf_matches_the_reference_model_within_tolerance(project, model):
    entry = report(project, "vgf-fp")["models"][model]
    check = entry["run_check"]
    assert check["passed"] and check["tolerance"].startswith("FP:")
    for output in check["outputs"]:
        # The documented bound, at its loosest (|ref| <= its max), holds the largest difference.
        assert output["max_abs_diff"] <= 1e-3, output
    assert entry["io"]["tosa_spec"] == "TOSA-1.0+FP"


def test_target_folders_hold_vgf_scenario_io_and_figures(project):
    for target in ("vgf-fp", "vgf-int8"):
        for model, entry in report(project, target)["models"].items():
            folder = project / "build" / target / model
            for name in ("model.vgf", "scenario.json", "vgf_io.json", "vgf_figures.json",
                         "run_check.json", "model.tosa", "verify.json"):
                assert (folder / name).is_file(), (target, model, name)
            assert entry["vgf"]["vgf_bytes"] == (folder / "model.vgf").stat().st_size
            assert entry["vgf"]["convert_seconds"] > 0
            assert entry["run_check"]["timing"]["load_seconds"] > 0
    io = json.loads((project / "build" / "vgf-int8" / "cnn" / "vgf_io.json").read_text())
    (image,) = io["inputs"]
    assert (image["name"], image["vgf_name"], image["shape"], image["layout"]) == (
        "image", "input_0", [1, 32, 32, 3], "NHWC")
    assert image["dtype"] == "int8" and image["scale"] > 0 and "zero_point" in image


def test_scenario_in_the_target_folder_runs_with_the_scenario_runner(project, tmp_path):
    """What docs/vgf.md (Running model.vgf on a device) tells users: input_<i>.npy beside scenario.json."""
    folder = tmp_path / "device"
    shutil.copytree(project / "build" / "vgf-int8" / "add", folder)
    io = json.loads((folder / "vgf_io.json").read_text())
    rng = np.random.default_rng(7)
    feeds = {}
    for i, entry in enumerate(io["inputs"]):
        feeds[entry.get("tosa_name", entry["name"])] = rng.integers(
            -128, 128, entry["shape"], dtype=np.int8)
        np.save(folder / f"input_{i}.npy", list(feeds.values())[-1])
    env = vulkan_environment(tmp_path / "layers")
    proc = subprocess.run([tool("scenario_runner"), "--scenario", str(folder / "scenario.json"),
                           "--output", str(tmp_path / "out")], env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    name = io["outputs"][0]["name"]
    expected = run_reference_model(folder / "model.tosa", feeds, [name])[name]
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "output_0.npy"), expected)


def test_ethos_u_target_reuses_the_lowering_of_the_vgf_target(project):
    tasks = subprocess.run(doit_list(project), capture_output=True, text=True,
                           check=True).stdout.split()
    vela = next(t for t in tasks if t.startswith("vela:add/int8/TOSA-1.0+INT+int16/"))
    ran = executed(doit(project, vela))
    assert ran == [vela]  # lower and verify of add were built by vgf-int8 already


def doit_list(project: Path) -> list[str]:
    return doit_argv(project, "list", "--all", "--quiet")


def test_second_build_runs_nothing(project):
    assert executed(doit(project, "build", "target=vgf-fp,vgf-int8,vgf-a16w8")) == []


def _sub_for_add(project: Path, tmp_path: Path, bad: Path) -> None:
    """``bad/model.vgf`` (+ scenario.json): the int8 add graph with its ADD made a SUB."""
    folder = project / "build" / "vgf-int8" / "add"
    (tmp_path / "empty.mlir").write_text("module {}\n")
    mlir = tmp_path / "add.mlir"
    subprocess.run([tool("tosa-opt"), "--pass-pipeline=builtin.module(tosa-deserialize"
                    f"{{tosa-flatbuffer-filename={folder / 'model.tosa'}}})",
                    str(tmp_path / "empty.mlir"), "-o", str(mlir)], check=True)
    text = mlir.read_text()
    assert "tosa.add " in text
    mlir.write_text(text.replace("tosa.add ", "tosa.sub "))
    bad.mkdir()
    subprocess.run([tool("model-converter"), "-i", str(mlir), "-o", str(bad / "model.vgf")],
                   check=True, capture_output=True)
    shutil.copyfile(folder / "scenario.json", bad / "scenario.json")


def test_a_vgf_computing_something_else_fails_the_run_check(project, tmp_path):
    """The add graph with its ADD turned into a SUB, converted, run against the real add."""
    folder = project / "build" / "vgf-int8" / "add"
    bad = tmp_path / "bad"
    _sub_for_add(project, tmp_path, bad)
    test_inputs = project / "build" / ".stages" / "export" / "add" / "test_inputs.pt"
    with pytest.raises(VerificationError, match=r"^t/vgf_check: output 'add' \(output_0\) of "
                       r"the \.vgf must match the TOSA reference model's bit for bit \(INT "
                       r"graph\); got \d+ of 1024 elements different in sample 0, first at "
                       r"\(0, \d+, \d+, \d+\) \(vgf -?\d+, reference -?\d+\), max \|diff\| \d+"):
        run_check(bad / "model.vgf", bad / "scenario.json", folder / "vgf_io.json",
                  folder / "model.tosa", test_inputs, tmp_path / "run_check.json",
                  where="t/vgf_check")
    assert not json.loads((tmp_path / "run_check.json").read_text())["passed"]



@pytest.mark.skipif(jobs_allowed() < 2, reason="one core: the run checks run one at a time")
def test_run_checks_of_a_serial_build_ran_side_by_side(project):
    """doit's serial build: the first run check ran all eight side by side (alongside.py);
    every other check's task then restored its entry from the store."""
    for target in ("vgf-fp", "vgf-int8"):
        log = (project / f"{target}.log").read_text()
        jobs = min(jobs_allowed(), len(MODELS))
        assert f"vgf_check: {len(MODELS)} of this build's {len(MODELS)} side by side, " \
               f"{jobs} at a time" in log, log
        assert re.search(r"vgf_check: 8 side by side in [0-9.]+s wall", log)
        for model in MODELS:
            built = re.findall(rf"^   vgf_check:{model}/\S+: built in [0-9.]+s", log, re.M)
            restored = re.findall(rf"^   vgf_check:{model}/\S+: restored from store", log, re.M)
            assert len(built) == 1 and len(restored) == 1, (model, log)


def test_a_check_failing_side_by_side_is_reported_by_its_own_task(project, tmp_path,
                                                                   monkeypatch):
    """Two checks side by side, one of a .vgf computing SUB for ADD: the good one's entry is
    stored, the bad one stores nothing, and its own run then fails naming the mismatch."""
    from doit.exceptions import TaskFailed

    from pipeline.config import load_config
    from pipeline.graph import alongside
    from pipeline.graph.actions import _keys, run_stage
    from pipeline.graph.plan import make_plan

    plan = make_plan(load_config(project / "targets.yaml"), project / "build")
    checks = {b.model: b.vgf_check for b in plan.targets["vgf-int8"]}
    bad = tmp_path / "bad"
    _sub_for_add(project, tmp_path, bad)

    def moved(inv, name, **inputs):  # the same check writing under tmp_path
        return replace(inv, inputs={**inv.inputs, **inputs},
                       outputs={r: tmp_path / name / p.name for r, p in inv.outputs.items()})

    good_inv = moved(checks["cnn"], "cnn")
    bad_inv = moved(checks["add"], "add", vgf=bad / "model.vgf", scenario=bad / "scenario.json")
    store = Store(tmp_path / "store")
    monkeypatch.setattr(alongside, "_seen", set())
    monkeypatch.setenv(alongside.JOBS_ENV, "2")
    alongside.run_alongside(good_inv, [(bad_inv, "t/vgf_check"), (good_inv, "t/vgf_check")],
                            str(store.root), pending=lambda p: not store.has(
                                _keys(p, store, None)[0]), run=run_stage)
    assert store.has(_keys(good_inv, store, None)[0])
    assert not store.has(_keys(bad_inv, store, None)[0])
    failed = run_stage(bad_inv, str(store.root), "t/vgf_check")
    assert isinstance(failed, TaskFailed)
    assert "of the .vgf must match the TOSA reference model's bit for bit" in str(failed)


def test_check_jobs_must_be_a_whole_number(monkeypatch):
    from pipeline.graph import alongside

    monkeypatch.setenv(alongside.JOBS_ENV, "two")
    with pytest.raises(UserError, match=r"^ETHOSU_PIPELINE_CHECK_JOBS must be a whole number "
                       r">= 1 \(.*\); got 'two'$"):
        alongside.jobs_allowed()
    monkeypatch.setenv(alongside.JOBS_ENV, "1")
    assert alongside.jobs_allowed() == 1


def _add_and_cnn(project: Path, tmp_path: Path) -> Path:
    """A project of the add and cnn models only, whose store holds every stage the module's
    build computed for them but the run checks: its build restores the graphs and runs the
    checks, which the tests below are about."""
    root = tmp_path / "p"
    shutil.copytree(project / "models", root / "models")
    (root / "targets.yaml").write_text(TARGETS.replace(
        f"models: [{', '.join(MODELS)}]", "models: [add, cnn]"))
    seeded_store(project / "store", root / "store", leave_out=("vgf_check",))
    return root


def test_doit_parallel_build_runs_each_check_in_its_own_task(project, tmp_path):
    """Under ``doit -n 2`` doit already runs tasks side by side: no check runs its peers."""
    root = _add_and_cnn(project, tmp_path)
    proc = doit(root, "-n", "2", "build", "target=vgf-int8")
    assert "side by side" not in proc.stdout, proc.stdout
    for model in ("add", "cnn"):
        assert re.search(rf"^   vgf_check:{model}/\S+: built in [0-9.]+s", proc.stdout, re.M)
        assert report(root, "vgf-int8")["models"][model]["run_check"]["passed"]


@pytest.mark.skipif(jobs_allowed() < 2, reason="one core: the run checks run one at a time")
def test_checks_of_targets_built_later_join_a_later_side_by_side(project, tmp_path):
    """Two targets in one serial build: whichever checks are ready when a check's task runs go
    side by side; those whose graphs come later join a later task's queue. Each check is
    computed once, and every one passes."""
    root = _add_and_cnn(project, tmp_path)
    log = doit(root, "build", "target=vgf-fp,vgf-int8").stdout
    batches = [int(n) for n in re.findall(r"vgf_check: (\d+) of this build's 4 side by side", log)]
    assert batches and all(n >= 2 for n in batches) and sum(batches) <= 4, log  # doit's order
    for target in ("vgf-fp", "vgf-int8"):
        for model in ("add", "cnn"):
            assert report(root, target)["models"][model]["run_check"]["passed"]
    assert len(re.findall(r"^   vgf_check:\S+: built in", log, re.M)) == 4, log
