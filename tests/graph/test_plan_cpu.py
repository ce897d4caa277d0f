"""CPU-only targets (npu: null on a Cortex-M/A) in the graph, as data: the cpu_graph,
firmware and cpu_verify invocations, what they share and what they depend on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.config import load_config
from pipeline.config.boards import BOARDS
from pipeline.config.cpus import CPUS
from pipeline.graph.plan import make_plan
from pipeline.graph.tasks import stage_tasks, target_tasks

ROOT = Path(__file__).resolve().parents[2]
SPEC = "add/int8/TOSA-1.0+INT+int16"

YAML = """\
models:
  add:
    source: {root}/models/add.py:AddModel
    inputs: [{{shape: [1, 8, 8, 16]}}, {{shape: [1, 8, 8, 16]}}]
defaults:
  models: [add]
targets:
  m55: {{cpu: cortex-m55, npu: null}}
  m4: {{cpu: cortex-m4, npu: null}}
  m0: {{cpu: cortex-m0plus, npu: null}}
  a53: {{cpu: cortex-a53, npu: null}}
  ref: {{cpu: host, npu: null}}
  fp: {{cpu: cortex-m55, npu: null, tosa: TOSA-1.0+FP}}
  npu: {{cpu: cortex-m55, npu: {{config: ethos-u55-128}}}}
  vgf: {{cpu: cortex-a55, npu: null, vgf: {{}}}}
"""


@pytest.fixture
def plan(tmp_path):
    path = tmp_path / "targets.yaml"
    path.write_text(YAML.format(root=ROOT))
    return make_plan(load_config(path), tmp_path / "build")


def test_the_cpu_graph_is_shared_by_every_cpu_only_target(plan):
    graphs = [inv for inv in plan.invocations.values() if inv.stage == "cpu_graph"]
    assert [g.name for g in graphs] == [SPEC]
    assert plan.users[f"cpu_graph:{SPEC}"] == ["m55", "m4", "m0", "a53"]  # not "vgf"
    lower = plan.targets["m55"][0].lower
    assert graphs[0].inputs == {"tosa": lower.outputs["tosa"], "io": lower.outputs["io"]}


def test_bare_metal_cpu_targets_link_firmware_for_their_board(plan):
    for target, board, isa in (("m55", "mps3_an547", "mve"), ("m4", "mps2_an386", "dsp"),
                               ("m0", "mps2_an385", "scalar")):
        b = plan.targets[target][0]
        assert b.firmware.options["board"] == board
        assert b.firmware.options["runner"] == "cpu" and b.firmware.options["isa"] == isa
        assert b.firmware.inputs["artifact"] == b.cpu_graph.outputs["artifact"]
        assert b.firmware.outputs["elf"].name == "tosa_cpu_runner.elf"
        assert "ethosu_sdk" not in b.firmware.params
        assert b.cpu_verify.inputs["firmware"] == b.firmware.outputs["elf"]
        assert b.cpu_verify.options["qemu"] == board.replace("_", "-")


def test_a_cpu_qemu_lacks_runs_on_the_nearest_one_and_says_so(plan):
    m0 = plan.targets["m0"][0].cpu_verify.options
    assert (m0["cpu"], m0["qemu_cpu"]) == ("cortex-m0plus", "cortex-m3")
    assert "ARMv6-M" in m0["substitute"]
    assert plan.targets["m55"][0].cpu_verify.options["substitute"] is None


def test_linux_cpu_targets_run_the_runner_under_qemu_aarch64(plan):
    b = plan.targets["a53"][0]
    runtime = plan.runtimes["a53"]
    assert b.firmware is None
    assert runtime.task == "runtime:aarch64-linux-gnu-gcc/cortex-a53/Release/cpu"
    assert set(runtime.outputs) == {"tosa_cpu_runner", "libethosu_rt_common.a", "libtosa_cpu.a"}
    assert b.cpu_verify.inputs["runner"] == runtime.outputs["tosa_cpu_runner"]
    assert b.cpu_verify.inputs["artifact"] == b.cpu_graph.outputs["artifact"]
    assert (b.cpu_verify.options["qemu"], b.cpu_verify.options["qemu_cpu"]) == (
        "qemu-aarch64", "cortex-a53")


def test_cpu_runtimes_are_apart_from_npu_runtimes(plan):
    assert plan.runtimes["m55"].task.endswith("/cpu")
    assert plan.runtimes["m55"].task != plan.runtimes["npu"].task
    assert "runner" not in plan.runtimes["npu"].options
    assert set(plan.runtimes["m55"].outputs) == {"libethosu_rt_common.a", "libtosa_cpu.a"}


def test_host_float_and_vgf_targets_get_no_cpu_stages(plan):
    for target in ("ref", "fp", "vgf"):
        b = plan.targets[target][0]
        assert (b.cpu_graph, b.firmware, b.cpu_verify) == (None, None, None)
        assert plan.runtimes[target] is None
    npu = plan.targets["npu"][0]
    assert (npu.cpu_graph, npu.cpu_verify) == (None, None)


def test_cpu_verify_task_depends_on_what_it_runs_and_checks_against(plan, tmp_path):
    [task] = [t for t in stage_tasks(plan, tmp_path / "store", "cpu_verify")
              if t.get("name") and "cortex-m4" in t["name"]]
    b = plan.targets["m4"][0]
    for path in (b.firmware.outputs["elf"], b.lower.outputs["tosa"],
                 b.cpu_graph.outputs["plan"], b.verify.inputs["test_inputs"]):
        assert str(path) in task["file_dep"]
    assert task["targets"] == [str(b.cpu_verify.outputs["report"])]


def test_build_task_collects_the_cpu_outputs(plan, tmp_path):
    configs = {name: {} for name in plan.targets}
    [task] = [t for t in target_tasks(plan, tmp_path / "build", configs, ["m55"])
              if t["name"] == "m55"]  # then build:report.html
    b = plan.targets["m55"][0]
    assert str(b.cpu_verify.outputs["report"]) in task["file_dep"]
    assert str(b.firmware.outputs["elf"]) in task["file_dep"]
    names = {Path(t).name for t in task["targets"]}
    assert {"model.cpu.bin", "cpu_plan.json", "cpu_verify.json", "tosa_cpu_runner.elf"} <= names


def test_every_arm_cpu_has_a_qemu_machine():
    arm = {name for name, info in CPUS.items() if info.kind != "host"}
    assert set(BOARDS) == arm
    for cpu, board in BOARDS.items():
        assert (board.board is None) == (CPUS[cpu].kind == "cortex-a")
        # A substitute is named exactly where QEMU's CPU is not the target's.
        assert (board.substitute is None) == (board.qemu_cpu == cpu)


def test_a_float_cortex_target_without_npu_says_why_it_has_no_cpu_artifact(tmp_path, capsys):
    from pipeline.graph.report import write_target

    config = {"cpu": "cortex-a53", "platform": "linux", "npu": None, "tosa": "TOSA-1.0+FP"}
    write_target("fp", [], None, tmp_path / "fp", config)
    report = json.loads((tmp_path / "fp" / "report.json").read_text())
    assert report["cpu"] == ("not built: the CPU kernels run TOSA INT graphs; tosa is "
                             "TOSA-1.0+FP, so the graph is only verified on the host")
    assert "fp: CPU artifact not built: the CPU kernels run TOSA INT graphs" in (
        capsys.readouterr().out)
    write_target("ref", [], None, tmp_path / "ref", {**config, "platform": "host"})
    assert "cpu" not in json.loads((tmp_path / "ref" / "report.json").read_text())
