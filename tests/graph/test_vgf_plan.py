"""VGF targets in the graph, as data: one lowering serves Ethos-U and VGF targets alike; the
vgf and vgf_check tasks, their keys' options and the files the target task writes."""

from __future__ import annotations

import pytest

from pipeline.config import load_config
from pipeline.graph.plan import make_plan
from pipeline.stages.vgf_check import RUNNER
from pipeline.graph.tasks import stage_tasks, target_tasks
from tests.graph.test_plan import ROOT

YAML = """\
models:
  add:
    source: {root}/models/add.py:AddModel
    inputs: [{{shape: [1, 8, 8, 16]}}, {{shape: [1, 8, 8, 16]}}]
defaults:
  models: [add]
targets:
  u85: {{cpu: cortex-a55, npu: {{config: ethos-u85-256}}}}
  vgf-int8: {{cpu: cortex-a55, vgf: {{}}}}
  vgf-int8-debug: {{cpu: cortex-a76, vgf: {{emit_debug_info: true}}}}
  vgf-fp: {{cpu: cortex-a55, tosa: TOSA-1.0+FP, quantization: none, vgf: {{}}}}
"""
INT = "add/int8/TOSA-1.0+INT+int16"


@pytest.fixture
def plan(tmp_path):
    path = tmp_path / "targets.yaml"
    path.write_text(YAML.format(root=ROOT))
    return make_plan(load_config(path), tmp_path / "build")


def _names(plan, stage):
    return sorted(inv.name for inv in plan.invocations.values() if inv.stage == stage)


def test_ethos_u_and_vgf_targets_share_one_lowering_and_verification(plan):
    assert _names(plan, "lower") == ["add/int8/TOSA-1.0+INT+int16", "add/none/TOSA-1.0+FP"]
    assert plan.users[f"lower:{INT}"] == ["u85", "vgf-int8", "vgf-int8-debug"]
    assert plan.users[f"verify:{INT}"] == ["u85", "vgf-int8", "vgf-int8-debug"]
    u85, vgf = plan.targets["u85"][0], plan.targets["vgf-int8"][0]
    assert u85.lower is vgf.lower and u85.verify is vgf.verify
    assert (vgf.vela, vgf.package, u85.vgf) == (None, None, None)
    assert plan.runtimes["vgf-int8"] is None  # no Ethos-U runtime to build


def test_vgf_is_converted_once_per_converter_options(plan):
    vgf = _names(plan, "vgf")
    assert len(vgf) == 3 and _names(plan, "vgf_check") == vgf
    int8 = plan.targets["vgf-int8"][0].vgf
    assert int8.inputs["tosa"] == plan.targets["u85"][0].lower.outputs["tosa"]  # not a variant
    assert int8.options == {"vgf": {"emit_debug_info": False, "replicated_composites": True}}
    debug = plan.targets["vgf-int8-debug"][0].vgf
    assert debug.name != int8.name and debug.params == {"converter_args": ["--emit-debug-info"]}


def test_vgf_tasks_depend_on_the_graph_and_the_test_inputs(plan, tmp_path):
    check = plan.targets["vgf-fp"][0].vgf_check
    tasks = stage_tasks(plan, tmp_path / "store", "vgf_check")
    (task,) = [t for t in tasks if t["name"] == check.name]
    assert {str(p) for p in check.inputs.values()} <= set(task["file_dep"])
    assert any(d.endswith("export/add/test_inputs.pt") for d in task["file_dep"])
    assert any(d.endswith("vgf/vulkan.py") for d in task["file_dep"])
    assert task["targets"] == [str(check.outputs["report"])]
    tools = task["uptodate"][0].config["tools"]  # a converter/runner upgrade reruns it
    assert set(RUNNER) <= set(tools)


def test_target_task_writes_the_vgf_views(plan, tmp_path):
    task, _report_html = target_tasks(plan, tmp_path / "build", {"vgf-fp": {}}, ["vgf-fp"])
    folder = tmp_path / "build" / "vgf-fp" / "add"
    for name in ("model.vgf", "scenario.json", "vgf_io.json", "vgf_figures.json",
                 "run_check.json"):
        assert str(folder / name) in task["targets"]
    check = plan.targets["vgf-fp"][0].vgf_check
    assert str(check.outputs["report"]) in task["file_dep"]


def test_run_checks_know_their_peers_of_the_selected_targets_only(plan, tmp_path):
    """The first run check of a serial build runs its peers side by side (alongside.py): the
    checks the selected targets need, not every target's."""
    def peer_lists(stage, selected):
        tasks = stage_tasks(plan, tmp_path / "store", stage, None, selected)
        return [t["actions"][0][1][4] for t in tasks if t["name"]]

    every = {b.vgf_check.task for builds in plan.targets.values() for b in builds
             if b.vgf_check is not None}
    assert len(every) == 3  # vgf-int8, vgf-int8-debug (same lowering) and vgf-fp
    assert all({p.task for p, _ in peers} == every for peers in peer_lists("vgf_check", None))
    assert peer_lists("vgf_check", ["vgf-fp"]) == [None, None, None]  # alone: no peers
    fp, int8 = (plan.targets[t][0].vgf_check.task for t in ("vgf-fp", "vgf-int8"))
    peers = peer_lists("vgf_check", ["vgf-fp", "vgf-int8"])
    assert all({p.task for p, _ in ps} == {fp, int8} for ps in peers)
    assert all(ps is None for ps in peer_lists("vela", None))  # only run checks go side by side
