"""The plan cache: a second load reuses the plan, and anything the plan was made from that
changes (the targets file, a model's imports, a calibration folder) plans again."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.graph import plan_cache, project

ROOT = Path(__file__).resolve().parents[2]

YAML = """\
models:
  add:
    source: add.py:AddModel
    inputs: [{shape: [1, 8, 8, 16]}, {shape: [1, 8, 8, 16]}]
targets:
  ref: {cpu: host, npu: null, models: [add]}
  u55: {cpu: cortex-m55, npu: {config: ethos-u55-128}, models: [add]}
"""


@pytest.fixture
def proj(tmp_path) -> Path:
    shutil.copy(ROOT / "models" / "add.py", tmp_path / "add.py")
    (tmp_path / "targets.yaml").write_text(YAML)
    return tmp_path


def load(folder: Path) -> project.Project:
    values = {"targets": str(folder / "targets.yaml"), "store": str(folder / "store")}
    return project.load(lambda name, default=None: values.get(name, default))


def test_second_load_reuses_the_plan(proj):
    first = load(proj)
    assert first.config is not None and (proj / "build" / plan_cache.CACHE_FILE).is_file()
    second = load(proj)
    assert second.config is None  # targets.yaml was not read again
    assert second.plan.invocations == first.plan.invocations
    assert second.plan.targets == first.plan.targets
    assert second.target_configs() == first.target_configs()


def test_a_cached_load_imports_no_pydantic(proj):
    """The no-op path: with a valid cache, neither the config models nor pydantic load."""
    load(proj)
    code = ("import sys; sys.argv = ['doit', 'list']  # no lock: this test holds it\n"
            "from pipeline.graph import project; "
            f"v = {{'targets': {str(proj / 'targets.yaml')!r}}}; "
            "p = project.load(lambda n, d=None: v.get(n, d)); "
            "print(p.config is None, 'pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["True", "False"]


def test_an_edited_targets_file_plans_again(proj):
    load(proj)
    with open(proj / "targets.yaml", "a") as handle:
        handle.write("  u85: {cpu: cortex-m85, npu: {config: ethos-u85-256}, models: [add]}\n")
    again = load(proj)
    assert again.config is not None
    assert "u85" in again.plan.targets and "u85" in again.target_configs()


def test_a_model_importing_a_new_helper_plans_again(proj):
    load(proj)
    (proj / "helper.py").write_text("SCALE = 1\n")
    source = (proj / "add.py").read_text()
    (proj / "add.py").write_text("import helper  # noqa: F401\n" + source)
    export = load(proj).plan.invocations["export:add"]
    assert export.inputs["imports/helper.py"] == (proj / "helper.py").resolve()


def test_a_file_added_to_the_calibration_folder_plans_again(proj):
    import numpy as np

    (proj / "calib").mkdir()
    np.save(proj / "calib" / "a.npy", np.zeros((1, 8, 8, 16), np.float32))
    (proj / "targets.yaml").write_text(YAML.replace(
        "inputs: [{shape: [1, 8, 8, 16]}, {shape: [1, 8, 8, 16]}]",
        "inputs: [{shape: [1, 8, 8, 16]}]\n    calibration: {folder: calib}"))
    assert sorted(load(proj).plan.invocations["export:add"].inputs) == [
        "calibration/a.npy", "source"]
    np.save(proj / "calib" / "b.npy", np.zeros((1, 8, 8, 16), np.float32))
    assert sorted(load(proj).plan.invocations["export:add"].inputs) == [
        "calibration/a.npy", "calibration/b.npy", "source"]


@pytest.mark.parametrize("damage", [b"", b"not a pickle", b"\x80\x05K\x01."],
                         ids=["empty", "garbage", "foreign"])
def test_a_damaged_cache_is_ignored_and_rewritten(proj, damage):
    load(proj)
    cache = proj / "build" / plan_cache.CACHE_FILE
    cache.write_bytes(damage)
    again = load(proj)
    assert again.config is not None and sorted(again.plan.targets) == ["ref", "u55"]
    assert load(proj).config is None  # rewritten, valid again


def test_a_config_error_is_still_reported_after_a_cached_load(proj, capsys):
    load(proj)
    (proj / "targets.yaml").write_text(YAML.replace("ethos-u55-128", "ethos-u55-999"))
    with pytest.raises(SystemExit):
        load(proj)
    assert "targets.yaml:7: targets.u55.npu.config: must be one of" in capsys.readouterr().err
    assert json.dumps("ethos-u55-999") not in (proj / "build" / plan_cache.CACHE_FILE).read_text(
        errors="replace")
