"""The graph as data: task names, dependencies and sharing, without running doit."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.config import load_config
from pipeline.graph.code import code_files
from pipeline.graph.plan import make_plan
from pipeline.graph.stages import STAGES
from pipeline.graph.tasks import stage_tasks, target_tasks

ROOT = Path(__file__).resolve().parents[2]

YAML = """\
models:
  add:
    source: {root}/models/add.py:AddModel
    inputs: [{{shape: [1, 8, 8, 16]}}, {{shape: [1, 8, 8, 16]}}]
  cnn:
    source: {root}/models/cnn.py:SmallCNN
    inputs: [{{shape: [1, 3, 32, 32]}}]
defaults:
  models: [add, cnn]
targets:
  a: {{cpu: cortex-a55, npu: {{config: ethos-u85-256}}}}
  b: {{cpu: cortex-m85, npu: {{config: ethos-u85-256}}}}
  c: {{cpu: cortex-m55, npu: {{config: ethos-u55-128}}}}
  d: {{cpu: cortex-m55, npu: {{config: ethos-u55-128}}, build_type: Debug}}
  ref: {{cpu: host, npu: null}}
"""


@pytest.fixture
def plan(tmp_path):
    path = tmp_path / "targets.yaml"
    path.write_text(YAML.format(root=ROOT))
    return make_plan(load_config(path), tmp_path / "build")


def _names(plan, stage):
    return sorted(inv.name for inv in plan.invocations.values() if inv.stage == stage)


def test_models_are_exported_quantized_and_lowered_once_for_all_targets(plan):
    assert _names(plan, "export") == ["add", "cnn"]
    assert _names(plan, "quantize") == ["add/int8", "cnn/int8"]
    lowered = ["add/int8/TOSA-1.0+INT+int16", "cnn/int8/TOSA-1.0+INT+int16"]
    assert _names(plan, "lower") == lowered
    assert _names(plan, "verify") == lowered


def test_vela_runs_once_per_distinct_npu_options(plan):
    vela = _names(plan, "vela")
    # a (Linux direct drive: COP2) and b (bare metal: COP1) differ; c and d share everything
    # Vela sees (the runtime's build type does not reach Vela).
    assert len(vela) == 2 * 3
    assert len([n for n in vela if "ethos-u55-128" in n]) == 2
    assert plan.users[f"vela:{next(n for n in vela if 'u55' in n)}"] == ["c", "d"]


def test_host_target_has_no_npu_stages(plan):
    assert all(b.vela is None and b.package is None for b in plan.targets["ref"])


def test_stages_chain_through_files(plan):
    for inv in plan.invocations.values():
        for role, path in inv.inputs.items():
            producers = [u for u in plan.invocations.values() if path in u.outputs.values()]
            assert len(producers) <= 1, f"{inv.task}:{role} has two producers"
    build = plan.targets["a"][1]
    assert build.package.inputs["npz"] == build.vela.outputs["npz"]
    assert build.vela.inputs["tosa"] == build.lower.outputs["tosa_u85"]
    assert build.verify.inputs["tosa"] == build.lower.outputs["tosa"]


def test_vela_compiles_the_variant_of_its_npu_family_and_verify_checks_each(plan):
    u55, u85 = plan.targets["c"][1], plan.targets["a"][1]
    assert u55.lower is u85.lower  # one lowering serves both NPUs
    assert u55.vela.inputs["tosa"].name == "model.u55.tosa"
    assert u85.vela.inputs["tosa"].name == "model.u85.tosa"
    assert {r for r in u55.verify.inputs if r.startswith("tosa_")} == {"tosa_u55", "tosa_u85"}


def test_fp_graphs_have_no_npu_variants(tmp_path):
    path = tmp_path / "targets.yaml"
    path.write_text(YAML.format(root=ROOT).replace(
        "ref: {cpu: host, npu: null}", "ref: {cpu: host, npu: null, tosa: TOSA-1.0+FP}"))
    build = make_plan(load_config(path), tmp_path / "build").targets["ref"][0]
    # placement.json is written all the same (no family: empty), so the outputs stay fixed
    assert sorted(build.lower.outputs) == ["io", "placement", "tosa"]


def test_stage_task_dicts(plan, tmp_path):
    tasks = list(stage_tasks(plan, tmp_path / "store", "vela"))
    assert tasks[0] == {"basename": "vela", "name": None, "doc": tasks[0]["doc"]}
    task = tasks[1]
    inv = plan.invocations[f"vela:{task['name']}"]
    assert task["targets"] == [str(p) for p in inv.outputs.values()]
    assert str(inv.inputs["tosa"]) in task["file_dep"]
    assert str(inv.inputs["vela_ini"]) in task["file_dep"]
    assert str(ROOT / "pipeline" / "stages" / "vela.py") in task["file_dep"]
    assert task["actions"][0][1][2] in ("a/vela", "b/vela", "c,d/vela")


def test_options_never_hold_absolute_paths(plan):
    # Keys must match across checkouts and machines: paths enter only as hashed inputs.
    for inv in plan.invocations.values():
        assert "/" + ROOT.parts[1] not in str(inv.options), inv.task


def test_target_task_depends_on_its_artifacts(plan, tmp_path):
    configs = {name: {} for name in plan.targets}
    task, report = target_tasks(plan, tmp_path / "build", configs, ["c"])
    assert task["name"] == "c"
    for b in plan.targets["c"]:
        assert str(b.package.outputs["artifact"]) in task["file_dep"]
        assert str(b.vela.outputs["layers"]) in task["file_dep"]
    assert str(tmp_path / "build" / "c" / "cnn" / "model.bin") in task["targets"]
    assert str(tmp_path / "build" / "c" / "cnn" / "vela_per_layer.csv") in task["targets"]
    # build:report.html follows the selected targets' reports and reads every target's
    assert report["name"] == "report.html"
    # runs after the selected targets, and again when any report.json it reads changed (not
    # a file_dep: the list would follow the selection, and target=a would rewrite the page)
    assert report["task_dep"] == ["build:c"] and "file_dep" not in report
    assert report["targets"] == [str(tmp_path / "build" / "report.html")]
    assert report["actions"][0][1][2] == list(configs)


def test_code_files_cover_the_stage_modules():
    names = {p.name for p in code_files(STAGES["lower"])}
    assert "lower.py" in names and any(n.startswith("op_") for n in names)


def test_runtime_is_shared_by_toolchain_cpu_isa_and_build_type(plan):
    runtimes = {t: (r.task if r else None) for t, r in plan.runtimes.items()}
    assert runtimes == {
        "a": "runtime:aarch64-linux-gnu-gcc/cortex-a55/Release",
        "b": "runtime:arm-none-eabi-gcc/cortex-m85-mve/Release",
        "c": "runtime:arm-none-eabi-gcc/cortex-m55-mve/Release",
        "d": "runtime:arm-none-eabi-gcc/cortex-m55-mve/Debug",
        "ref": None,
    }
    assert "ethosu_runner" in plan.runtimes["a"].outputs
    assert "ethosu_runner" not in plan.runtimes["c"].outputs  # firmware needs the SDK


def test_runtime_depends_on_sources_not_on_models_or_npu_options(plan):
    runtime = plan.runtimes["a"]
    assert "runtime/common/artifact.cc" in runtime.inputs
    assert any(k.startswith("cmake/toolchains/") for k in runtime.inputs)
    assert not [p for p in runtime.inputs.values() if ".stages" in str(p)]
    assert "npu" not in runtime.options
    for inv in plan.invocations.values():
        if inv.stage in ("export", "quantize", "lower", "verify", "vela", "package"):
            assert not any(str(p).endswith(".cc") for p in inv.inputs.values()), inv.task


def test_firmware_only_with_an_sdk(tmp_path):
    sdk = tmp_path / "sdk"
    (sdk / "core_driver" / "include").mkdir(parents=True)
    (sdk / "core_driver" / "CMakeLists.txt").write_text("# driver\n")
    (sdk / "core_driver" / "include" / "ethosu_driver.h").write_text("")
    path = tmp_path / "targets.yaml"
    path.write_text(YAML.format(root=ROOT).replace(
        "build_type: Debug", f"build_type: Debug, ethosu_sdk: {sdk}"))
    plan = make_plan(load_config(path), tmp_path / "build")
    assert all(b.firmware is None for b in plan.targets["c"])
    firmware = [b.firmware for b in plan.targets["d"]]
    assert [f.stage for f in firmware] == ["firmware", "firmware"]
    assert firmware[0].inputs["artifact"] == plan.targets["d"][0].package.outputs["artifact"]
    assert "sdk/core_driver/CMakeLists.txt" in firmware[0].inputs


def test_targets_with_different_vela_ini_files_do_not_share_vela(tmp_path):
    from pipeline.config.vela_ini import default_vela_ini

    own = tmp_path / "my_vela.ini"
    own.write_text(default_vela_ini().read_text())
    path = tmp_path / "targets.yaml"
    path.write_text(YAML.format(root=ROOT).replace(
        "npu: {config: ethos-u55-128}, build_type: Debug",
        "npu: {config: ethos-u55-128, config_file: %s}, build_type: Debug" % own))
    plan = make_plan(load_config(path), tmp_path / "build")
    c, d = plan.targets["c"][0].vela, plan.targets["d"][0].vela
    assert c.task != d.task
    assert (c.inputs["vela_ini"], d.inputs["vela_ini"]) == (default_vela_ini(), own)


def test_calibration_observer_reaches_the_quantize_options(tmp_path):
    path = tmp_path / "targets.yaml"
    path.write_text(YAML.format(root=ROOT).replace(
        "inputs: [{shape: [1, 3, 32, 32]}]",
        "inputs: [{shape: [1, 3, 32, 32]}]\n    calibration: {observer: histogram}"))
    plan = make_plan(load_config(path), tmp_path / "build")
    assert plan.invocations["quantize:cnn/int8"].options == {
        "scheme": "int8", "observer": "histogram", "bias_correction": "auto"}  # the default
    assert plan.invocations["quantize:add/int8"].options["observer"] == "mse"


def test_export_code_covers_normalisation_and_the_operators_it_keeps():
    """Normalisation keeps the operators that have a visitor, and writes composite ones out
    with quant/: a change to any of them re-exports."""
    from pipeline.graph.plan import PIPELINE_DIR

    names = {p.relative_to(PIPELINE_DIR).as_posix() for p in code_files(STAGES["export"])}
    assert {"normalise/table.py", "normalise/rewrites.py", "normalise/decompose.py",
            "normalise/attention.py", "tosa/registry.py", "tosa/ops/op_conv2d.py"} <= names


@pytest.mark.parametrize("stage, modules", [
    ("quantize", {"normalise/table.py", "tosa/registry.py", "tosa/ops/op_table.py"}),
    ("lower", {"config/tosa_spec.py", "normalise/rewrites.py"}),
    ("verify", {"programs.py", "verify/reference_model.py"}),
], ids=["quantize-normalises-again", "lower-parses-the-spec", "verify-loads-programs"])
def test_stage_code_covers_the_modules_the_stage_runs(stage, modules):
    """A stage's key and file_dep cover the pipeline modules that shape its outputs: editing
    one re-runs the stage, even when its inputs come back byte for byte the same."""
    from pipeline.graph.plan import PIPELINE_DIR

    names = {p.relative_to(PIPELINE_DIR).as_posix() for p in code_files(STAGES[stage])}
    assert modules <= names


def test_post_training_techniques_reach_the_quantize_key(tmp_path):
    from pipeline.cache.key import stage_key

    path = tmp_path / "targets.yaml"
    path.write_text(YAML.format(root=ROOT).replace(
        "inputs: [{shape: [1, 3, 32, 32]}]",
        "inputs: [{shape: [1, 3, 32, 32]}]\n"
        "    calibration: {equalization: true, bias_correction: true}"))
    plan = make_plan(load_config(path), tmp_path / "build")
    on = plan.invocations["quantize:cnn/int8"]
    off = plan.invocations["quantize:add/int8"]
    assert on.options == {"scheme": "int8", "observer": "mse", "equalization": True,
                          "bias_correction": True}
    assert off.options == {"scheme": "int8", "observer": "mse", "bias_correction": "auto"}
    assert on.outputs["record"].name == "quantize.json"

    def key(options):
        return stage_key("quantize", "code", {}, options, {})[0]

    assert len({key(on.options), key({**on.options, "bias_correction": False}),
                key(off.options)}) == 3


def test_every_input_is_an_output_of_its_declared_kind():
    """Typed stage inputs and outputs (``pipeline/stages/declare.py``): every role the plan
    gives an invocation is declared by its stage, and an input made by another stage is an
    output of the kind the consumer declares (a .tosa into a tosa input, never an io.json)."""
    plan = make_plan(load_config(ROOT / "targets.yaml"), ROOT / "build")
    made = {}
    for inv in plan.invocations.values():
        stage = STAGES[inv.stage]
        for role, path in inv.outputs.items():
            declared = stage.file(role, stage.outputs)
            assert declared is not None, f"{inv.task}: output {role} is not declared"
            made[path] = (inv.task, declared.kind)
    wired = 0
    for inv in plan.invocations.values():
        stage = STAGES[inv.stage]
        for role, path in inv.inputs.items():
            declared = stage.file(role, stage.inputs)
            assert declared is not None, f"{inv.task}: input {role} is not declared"
            if path in made:
                wired += 1
                producer, kind = made[path]
                assert kind == declared.kind, f"{inv.task}.{role} <- {producer}: {kind}"
    assert wired > 50  # the shipped targets wire every stage into the next


def test_the_linux_driver_is_the_runtimes_choice_not_velas(tmp_path):
    """u85-linux (accel) and its driver-stack twin share every stage up to the artifact; the
    accel target's runtime keeps its name and options (and so its key), the stack gets its own
    runtime build keyed on the checkout's sources."""
    fake = ROOT / "tests" / "runtime" / "cortex_a" / "fake_driver_stack"
    path = tmp_path / "targets.yaml"
    path.write_text(YAML.format(root=ROOT) + (
        "  s: {cpu: cortex-a55, npu: {config: ethos-u85-256, driver: ethosu-driver-stack, "
        f"driver_stack: {fake}}}}}\n"
        "  f: {cpu: cortex-a55, npu: {config: ethos-u85-256, driver: ethosu-driver-stack}}\n"))
    plan = make_plan(load_config(path), tmp_path / "build")
    for a, s in zip(plan.targets["a"], plan.targets["s"]):
        assert a.vela.task == s.vela.task and a.package.task == s.package.task
    accel, stack, fetched = (plan.runtimes[t] for t in "asf")
    assert accel.task == "runtime:aarch64-linux-gnu-gcc/cortex-a55/Release"
    assert accel.options == {"toolchain": "aarch64-linux-gnu-gcc", "cpu": "cortex-a55",
                             "isa": None, "platform": "cortex_a", "build_type": "Release"}
    assert stack.task.startswith("runtime:aarch64-linux-gnu-gcc/cortex-a55/Release/driver-stack-")
    assert stack.options["driver"] == "ethosu-driver-stack"
    assert stack.params["driver_stack"] == str(fake)
    assert stack.inputs["driver_stack/driver_library/src/ethosu.cpp"] == (
        fake / "driver_library" / "src" / "ethosu.cpp")
    assert "libethosu_rt_driver_stack.a" in stack.outputs and "ethosu_runner" in stack.outputs
    # Without a checkout the pinned tag is part of the key, and the names differ.
    assert fetched.options["driver_stack_tag"] == "26.05" and fetched.task != stack.task
    assert "driver_stack_tag" not in stack.options
