"""A stage stores nothing when the code it ran is not the code its key covers: a project file
edited while the build runs (pipeline/graph/imported.py)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from pipeline.graph import imported

ROOT = Path(__file__).resolve().parents[2]


def test_a_file_changed_after_its_stamp_is_named(tmp_path):
    kept, edited, unseen = (tmp_path / n for n in ("kept.py", "edited.py", "unseen.py"))
    for path in (kept, edited, unseen):
        path.write_text("x = 1\n")
    imported.stamp(kept)
    imported.stamp(edited)
    edited.write_text("x = 22\n")  # another size: seen whatever the clock's resolution
    unseen.write_text("x = 333\n")  # never imported: not this process's code
    assert imported.changed_since_import([kept, edited, unseen]) == [edited.resolve()]


def test_a_project_module_is_stamped_when_it_is_imported(monkeypatch):
    imported.install()
    name = "pipeline.graph.operator_docs"
    monkeypatch.delitem(sys.modules, name, raising=False)
    file = str((ROOT / "pipeline" / "graph" / "operator_docs.py").resolve())
    monkeypatch.delitem(imported._STAMPS, file, raising=False)
    importlib.import_module(name)
    assert file in imported._STAMPS


@pytest.mark.needs_torch
def test_a_stage_whose_code_was_edited_during_the_build_stores_nothing(tmp_path, monkeypatch):
    """The export stage of the add model, run as its doit task runs it: with its own module
    stamped as something other than the file is now (as after an edit), the task fails with
    one line naming the file, and the store holds no entry; stamped as it is, it stores."""
    from doit.exceptions import TaskFailed

    from pipeline.cache.store import Store
    from pipeline.config.load import load_config
    from pipeline.graph.actions import _keys, run_stage
    from pipeline.graph.plan import make_plan

    (tmp_path / "targets.yaml").write_text(
        f"models:\n  add: {{source: {ROOT}/models/add.py:AddModel, inputs: [{{name: x, shape: "
        "[1, 4, 4, 8]}, {name: y, shape: [1, 4, 4, 8]}], calibration: {samples: 2}}\n"
        "targets:\n  ref: {cpu: cortex-a53, npu: null, tosa: TOSA-1.0+INT, models: [add]}\n")
    plan = make_plan(load_config(tmp_path / "targets.yaml"), tmp_path / "build")
    inv = next(i for i in plan.invocations.values() if i.stage == "export")
    for path in inv.outputs.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "build" / ".work").mkdir(parents=True, exist_ok=True)
    store = Store(tmp_path / "store")
    stage_file = str((ROOT / "pipeline" / "stages" / "export.py").resolve())
    imported.install()
    monkeypatch.setitem(imported._STAMPS, stage_file, (0, 0))

    failed = run_stage(inv, str(store.root), where="add/export")
    assert isinstance(failed, TaskFailed)
    message = str(failed.message if hasattr(failed, "message") else failed)
    assert "pipeline/stages/export.py changed while the build ran" in message, message
    assert "run the build again" in message and "Traceback" not in message
    assert not store.has(_keys(inv, store, None)[0])

    monkeypatch.setitem(imported._STAMPS, stage_file, imported._stat(stage_file))
    assert not isinstance(run_stage(inv, str(store.root), where="add/export"), TaskFailed)
    assert store.has(_keys(inv, store, None)[0])
