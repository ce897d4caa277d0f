"""From a validated configuration to stage invocations, deduplicated across targets.

An invocation is named by what it depends on, not by the target that asked for it: ten
targets sharing a model export it once, and Vela runs once per distinct TOSA graph and NPU
options. Every path here is under ``<build>/.stages/<stage>/<name>/``; the per-target folders
``<build>/<target>/`` are views written by the target's own task.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from pathlib import Path

from pipeline.cache.key import options_digest
from pipeline.config.boards import BOARDS, Board
from pipeline.graph.code import code_files
from pipeline.graph.imports import local_imports
from pipeline.graph.stages import STAGES
from pipeline.stages.declare import KEEP
from pipeline.stages.runtime import PRODUCTS

PIPELINE_DIR = Path(__file__).resolve().parents[1]
REPO_DIR = PIPELINE_DIR.parent

CMAKE_PLATFORM = {"linux": "cortex_a", "baremetal": "cortex_m"}  # the targets with a runtime


def runtime_sources() -> list[Path]:
    """The runtime's sources and CMake files: a change to any of them rebuilds the runtime."""
    return list(_runtime_sources())


@functools.cache
def _runtime_sources() -> tuple[Path, ...]:
    # Listed once per process, not once per target: a build does not add sources as it plans.
    return tuple(sorted(p for d in ("runtime", "cmake") for p in (REPO_DIR / d).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts))


@dataclass(frozen=True)
class Invocation:
    """One run of one stage: inputs and options in, outputs out."""

    stage: str
    name: str
    inputs: dict[str, Path]
    outputs: dict[str, Path]
    options: dict = field(default_factory=dict)  # part of the key: no absolute paths here
    params: dict = field(default_factory=dict)  # passed to the stage, derived from the above

    @property
    def task(self) -> str:
        return f"{self.stage}:{self.name}"


@dataclass(frozen=True)
class ModelBuild:
    """What one target builds for one model: the invocations it ends in."""

    model: str
    lower: Invocation
    verify: Invocation
    vela: Invocation | None
    package: Invocation | None
    firmware: Invocation | None = None
    quantize: Invocation | None = None  # None for a float (quantization: none) target
    vgf: Invocation | None = None  # the .vgf of a target with a Vulkan ML device
    vgf_check: Invocation | None = None  # the .vgf run against the TOSA reference model
    cpu_graph: Invocation | None = None  # CPU-only targets (npu: null on a Cortex-M/A)
    cpu_verify: Invocation | None = None
    mixed: Invocation | None = None  # npu: {fallback: cpu}: NPU + CPU segments, one artifact
    mixed_verify: Invocation | None = None  # its CPU segments under QEMU

    def invocations(self) -> list[Invocation]:
        """The invocations the model's folder is made from, in pipeline order."""
        order = (self.quantize, self.lower, self.verify, self.vela, self.package, self.mixed,
                 self.mixed_verify, self.vgf, self.vgf_check, self.firmware, self.cpu_graph,
                 self.cpu_verify)
        return [inv for inv in order if inv is not None]

    def views(self) -> list[tuple[Path, str | None]]:
        """(output, name in the model's folder) of every declared view (None: read by the
        report, not copied), plus ``model.tosa``: the graph the NPU compiled, when there is
        one (its family's variant), else the lowered graph."""
        npu = self.vela or self.mixed
        views = [(npu.inputs["tosa"] if npu is not None else self.lower.outputs["tosa"],
                  "model.tosa")]
        for inv in self.invocations():
            for role, name in STAGES[inv.stage].views.items():
                path = inv.outputs[role]
                views.append((path, path.name if name == KEEP else name))
        return views


@dataclass
class Plan:
    invocations: dict[str, Invocation] = field(default_factory=dict)
    targets: dict[str, list[ModelBuild]] = field(default_factory=dict)
    runtimes: dict[str, Invocation | None] = field(default_factory=dict)  # target -> runtime
    users: dict[str, list[str]] = field(default_factory=dict)  # task -> targets needing it
    code: dict[str, list[str]] = field(default_factory=dict)  # stage -> its code files
    _current: str = ""

    def add(self, inv: Invocation) -> Invocation:
        users = self.users.setdefault(inv.task, [])
        if self._current not in users:
            users.append(self._current)
        return self.invocations.setdefault(inv.task, inv)

    def where(self, task: str) -> str:
        """``<targets>/<stage>``: how errors name the place a shared stage failed."""
        return f"{','.join(self.users[task])}/{self.invocations[task].stage}"


def _stage_dir(build: Path, stage: str, name: str) -> Path:
    return build / ".stages" / stage / name


def _outputs(build: Path, stage: str, name: str, *family: str) -> dict[str, Path]:
    """The declared outputs of ``stage`` (plus the family members named) in its folder."""
    return STAGES[stage].outputs_in(_stage_dir(build, stage, name), family)


def _relative(path: Path, folder: Path) -> str:
    """``path`` relative to ``folder`` when inside it, else its absolute path (a key name)."""
    try:
        return str(path.relative_to(folder.resolve()))
    except ValueError:
        return str(path)


def _export(plan: Plan, build: Path, name: str, model) -> Invocation:
    # One export per model, whichever target asks: reading its imports again for each of
    # hundreds of targets was most of a no-op build's time (issue 13).
    known = plan.invocations.get(f"export:{name}")
    if known is not None:
        return plan.add(known)
    inputs = {"source": model.source_path}
    # Local helper files the model file imports are inputs too: editing one re-exports.
    folder = model.source_path.parent
    for helper in local_imports(model.source_path):
        inputs[f"imports/{_relative(helper, folder)}"] = helper
    options = {"source_attr": model.source_attr, "seed": model.seed}
    params = {"source": str(model.source_path)}
    factory = model.input_factory
    if factory is not None:
        inputs["input_factory"] = factory.path
        for helper in local_imports(factory.path):
            inputs[f"imports/{_relative(helper, folder)}"] = helper
        options["input_factory"] = factory.attr
        params["input_factory"] = [str(factory.path), factory.attr]
    else:
        options["inputs"] = [spec.model_dump(mode="json") for spec in model.input_specs]
    calibration = model.calibration
    if calibration.folder is not None:
        files = sorted(p for p in calibration.folder.iterdir() if p.suffix in (".pt", ".npy"))
        inputs.update({f"calibration/{p.name}": p for p in files})
        params["calibration_folder"] = str(calibration.folder)
    else:
        options["calibration"] = {"samples": calibration.samples, "seed": calibration.seed}
    return plan.add(Invocation("export", name, inputs=inputs,
                               outputs=_outputs(build, "export", name),
                               options=options, params=params))


def _quantize_options(scheme: str, calibration) -> dict:
    """The quantize stage's options; a post-training technique only when it is on (bias
    correction is ``auto`` unless a model turns it off)."""
    options = {"scheme": scheme, "observer": calibration.observer}
    for name in ("equalization", "bias_correction"):
        if getattr(calibration, name):
            options[name] = getattr(calibration, name)  # True or "auto"
    if calibration.weights != "per_channel":
        options["weights"] = calibration.weights
    return options


def _model_build(plan: Plan, build: Path, target, model_name: str, model) -> ModelBuild:
    export = _export(plan, build, model_name, model)
    scheme, spec = target.quantization, str(target.tosa)
    quantize = None
    if scheme == "none":
        graph = export.outputs["model"]
    else:
        name = f"{model_name}/{scheme}"
        quantize = plan.add(Invocation(
            "quantize", name,
            inputs={"model": export.outputs["model"], "calibration": export.outputs["calibration"]},
            outputs=_outputs(build, "quantize", name),
            options=_quantize_options(scheme, model.calibration)))
        graph = quantize.outputs["model"]
    name = f"{model_name}/{scheme}/{spec}"
    specs = model.input_specs or ()
    names = [s.name for s in specs] if specs and all(s.name for s in specs) else None
    # An INT graph also comes in one variant per NPU family (its own TOSA passes applied).
    # Imported here: a cached plan needs no pydantic.
    from pipeline.config.npu import NPU_VARIANTS, RUNTIME_FIELDS

    variants = NPU_VARIANTS if target.tosa.profile == "INT" else ()
    lower = plan.add(Invocation(
        "lower", name, inputs={"model": graph},
        outputs=_outputs(build, "lower", name, *(f"tosa_{v}" for v in variants)),
        options={"spec": spec, "input_names": names}))
    verify = plan.add(Invocation(
        "verify", name,
        inputs={"float_model": export.outputs["model"], "model": graph,
                "tosa": lower.outputs["tosa"], "io": lower.outputs["io"],
                "test_inputs": export.outputs["test_inputs"],
                **{f"tosa_{v}": lower.outputs[f"tosa_{v}"] for v in variants}},
        outputs=_outputs(build, "verify", name)))
    if target.vgf is not None:
        vgf, check = _vgf(plan, build, target.vgf, name, lower, export)
        return ModelBuild(model_name, lower, verify, None, None, quantize=quantize,
                          vgf=vgf, vgf_check=check)
    if target.npu is None:
        cpu_graph = None
        if target.platform in CMAKE_PLATFORM and target.tosa.profile == "INT":
            cpu_graph = _cpu_graph(plan, build, lower)
        return ModelBuild(model_name, lower, verify, None, None, quantize=quantize,
                          cpu_graph=cpu_graph)
    # config_file's content is an input; fallback is the mixed stage's option, not Vela's;
    # the Linux driver is the runtime's (RUNTIME_FIELDS).
    npu = target.npu.model_dump(mode="json", exclude={"config_file", "fallback", *RUNTIME_FIELDS})
    # The name tells apart two ini files with equal options; the key sees only their content.
    variant = options_digest({**npu, "config_file": str(target.npu.config_file)})
    name = f"{model_name}/{scheme}/{spec}/{target.npu.config}-{variant}"
    if target.npu.fallback == "cpu":
        mixed = _mixed(plan, build, name, lower, target.npu,
                       {k: v for k, v in npu.items() if k != "search"})
        return ModelBuild(model_name, lower, verify, None, None, quantize=quantize, mixed=mixed)
    vela = plan.add(Invocation(
        "vela", name,
        inputs={"tosa": lower.outputs[f"tosa_{target.npu.variant}"],
                "placement": lower.outputs["placement"], "vela_ini": target.npu.config_file},
        outputs=_outputs(build, "vela", name),
        options={"npu": npu, **_search_key(target.npu)},
        params={"vela_args": target.npu.vela_args(),
                "vela_candidates": target.npu.vela_candidates()}))
    package = plan.add(Invocation(
        "package", name, inputs={"npz": vela.outputs["npz"], "io": lower.outputs["io"]},
        outputs=_outputs(build, "package", name)))
    return ModelBuild(model_name, lower, verify, vela, package, quantize=quantize)


def _search_key(npu) -> dict:
    """What the Vela option search varies (part of the vela stage's key: a target that sets
    ``optimise`` searches less than one that leaves it to the search)."""
    searched = npu.searched()
    return {"searched": {name: list(values) for name, values in searched.items()}} if searched else {}


def _mixed(plan: Plan, build: Path, name: str, lower: Invocation, npu, options: dict
           ) -> Invocation:
    """NPU + CPU segments of the NPU family's variant and their sequence artifact."""
    return plan.add(Invocation(
        "mixed", name,
        inputs={"tosa": lower.outputs[f"tosa_{npu.variant}"], "io": lower.outputs["io"],
                "placement": lower.outputs["placement"], "vela_ini": npu.config_file},
        outputs=_outputs(build, "mixed", name),
        options={"npu": options, "fallback": npu.fallback},
        params={"vela_args": npu.vela_args(), "accelerator": npu.config}))


def _mixed_verify(plan: Plan, build: Path, b: ModelBuild, runtime: Invocation,
                  target) -> Invocation:
    """Each CPU segment of a mixed graph under QEMU for the target's CPU (its own builds of
    the CPU runner, keyed by the runtime's options and sources)."""
    board = BOARDS[target.cpu]
    name = f"{b.mixed.name}/{runtime.name}"
    out = _stage_dir(build, "mixed_verify", name)
    # The CPU runner needs neither the NPU runner's kind nor its Linux driver.
    runtime_options = {k: v for k, v in runtime.options.items()
                       if k not in ("runner", "driver", "driver_stack_tag")}
    return plan.add(Invocation(
        "mixed_verify", name,
        inputs={"artifact": b.mixed.outputs["artifact"], "record": b.mixed.outputs["record"],
                "tosa": b.mixed.inputs["tosa"], "placement": b.mixed.inputs["placement"], "io": b.lower.outputs["io"],
                "test_inputs": b.verify.inputs["test_inputs"], **runtime.inputs},
        outputs=_outputs(build, "mixed_verify", name),
        options={**runtime_options, "board": board.board, "qemu": board.qemu,
                 "qemu_cpu": board.qemu_cpu, "substitute": board.substitute},
        params={"cmake_dir": str(out / "cmake")}))


def _cpu_graph(plan: Plan, build: Path, lower: Invocation) -> Invocation:
    """The kernel library's graph of the lowered INT graph: shared by every CPU-only target
    with the same model, scheme and spec (the graph does not depend on the CPU)."""
    return plan.add(Invocation(
        "cpu_graph", lower.name, inputs={"tosa": lower.outputs["tosa"], "io": lower.outputs["io"]},
        outputs=_outputs(build, "cpu_graph", lower.name)))


def _vgf(plan: Plan, build: Path, device, name: str, lower: Invocation,
         export: Invocation) -> tuple[Invocation, Invocation]:
    """The .vgf of a lowered graph (once per converter options) and its run check."""
    options = device.model_dump(mode="json")
    name = f"{name}/vgf-{options_digest(options)}"
    vgf = plan.add(Invocation(
        "vgf", name, inputs={"tosa": lower.outputs["tosa"], "io": lower.outputs["io"]},
        outputs=_outputs(build, "vgf", name),
        options={"vgf": options}, params={"converter_args": device.converter_args()}))
    check = plan.add(Invocation(
        "vgf_check", name,
        inputs={"vgf": vgf.outputs["vgf"], "scenario": vgf.outputs["scenario"],
                "vgf_io": vgf.outputs["vgf_io"], "tosa": lower.outputs["tosa"],
                "test_inputs": export.outputs["test_inputs"]},
        outputs=_outputs(build, "vgf_check", name)))
    return vgf, check


def _runtime(plan: Plan, build: Path, target) -> Invocation | None:
    """The runtime build a target needs: shared by every target with the same toolchain,
    CPU, ISA and build type; None for host and VGF targets. A CPU-only target (npu: null,
    no vgf) builds the kernel library and the CPU runner instead of the NPU backend."""
    platform = CMAKE_PLATFORM.get(target.platform)
    if platform is None or target.vgf is not None or (
            target.npu is None and target.tosa.profile != "INT"):
        return None
    options = {"toolchain": target.toolchain, "cpu": target.cpu, "isa": target.isa,
               "platform": platform, "build_type": target.build_type}
    name = f"{target.toolchain}/{target.cpu}{'-' + target.isa if target.isa else ''}/{target.build_type}"
    runner = "npu"
    if target.npu is None:
        options["runner"] = runner = "cpu"
        name += "/cpu"
    inputs = {str(p.relative_to(REPO_DIR)): p for p in runtime_sources()}
    params = {}
    if target.npu is not None and target.npu.driver == "ethosu-driver-stack":
        from pipeline.config.npu import DRIVER_STACK_TAG  # here: see _model_build
        from pipeline.config.paths import DRIVER_STACK_FILES

        # Named only off the default, so an accel target's runtime keeps its key and folder.
        options["driver"] = runner = target.npu.driver
        stack = target.npu.driver_stack
        if stack is None:
            options["driver_stack_tag"] = DRIVER_STACK_TAG
        else:
            params["driver_stack"] = str(stack)
            inputs.update({f"driver_stack/{f}": stack / f for f in DRIVER_STACK_FILES})
        name += f"/driver-stack-{options_digest({'stack': str(stack or DRIVER_STACK_TAG)})}"
    products = PRODUCTS[platform, runner]
    out = _stage_dir(build, "runtime", name)
    return plan.add(Invocation(
        "runtime", name, inputs=inputs,
        outputs=_outputs(build, "runtime", name, *products),
        options=options, params={"cmake_dir": str(out / "cmake"), **params}))


def _firmware(plan: Plan, build: Path, runtime: Invocation, package: Invocation,
              sdk: Path) -> Invocation:
    """Bare-metal firmware: the runner with one model artifact compiled in (``package``: the
    package stage's, or the mixed stage's sequence artifact, which the runner runs as one)."""
    name = f"{package.name}/{runtime.name}/sdk-{options_digest({'sdk': str(sdk)})}"
    out = _stage_dir(build, "firmware", name)
    sdk_files = sorted(p for p in sdk.rglob("*") if p.is_file() and ".git" not in p.parts)
    return plan.add(Invocation(
        "firmware", name,
        inputs={"artifact": package.outputs["artifact"], **runtime.inputs,
                **{f"sdk/{p.relative_to(sdk)}": p for p in sdk_files}},
        outputs={"elf": out / "ethosu_runner.elf"},
        options={**runtime.options, **({"sequence": True} if package.stage == "mixed" else {})},
        params={"cmake_dir": str(out / "cmake"), "ethosu_sdk": str(sdk)}))


def _cpu_firmware(plan: Plan, build: Path, runtime: Invocation, cpu_graph: Invocation,
                  board: Board) -> Invocation:
    """Bare-metal CPU firmware: the CPU runner with one CPU graph compiled in, linked for
    the MPS2/MPS3 board of the target's CPU (``config/boards.py``); no Ethos-U SDK."""
    name = f"{cpu_graph.name}/{runtime.name}"
    out = _stage_dir(build, "firmware", name)
    return plan.add(Invocation(
        "firmware", name, inputs={"artifact": cpu_graph.outputs["artifact"], **runtime.inputs},
        outputs={"elf": out / "tosa_cpu_runner.elf"},
        options={**runtime.options, "board": board.board},
        params={"cmake_dir": str(out / "cmake")}))


def _cpu_verify(plan: Plan, build: Path, b: ModelBuild, runtime: Invocation,
                target) -> Invocation:
    """Run the CPU artifact under QEMU on the test inputs against the TOSA reference model."""
    board = BOARDS[target.cpu]
    name = f"{b.cpu_graph.name}/{runtime.name}"
    if b.firmware is not None:
        program = {"firmware": b.firmware.outputs["elf"]}
    else:
        program = {"runner": runtime.outputs["tosa_cpu_runner"],
                   "artifact": b.cpu_graph.outputs["artifact"]}
    return plan.add(Invocation(
        "cpu_verify", name,
        inputs={**program, "tosa": b.lower.outputs["tosa"], "io": b.lower.outputs["io"],
                "plan": b.cpu_graph.outputs["plan"],
                "test_inputs": b.verify.inputs["test_inputs"]},
        outputs=_outputs(build, "cpu_verify", name),
        options={"qemu": board.qemu, "qemu_cpu": board.qemu_cpu, "cpu": target.cpu,
                 "substitute": board.substitute}))


def _cpu_builds(plan: Plan, build: Path, target, runtime: Invocation,
                builds: list[ModelBuild]) -> list[ModelBuild]:
    """A CPU-only target's firmware (bare metal) and QEMU check, per model."""
    done = []
    for b in builds:
        if runtime.options["platform"] == "cortex_m":
            b = replace(b, firmware=_cpu_firmware(plan, build, runtime, b.cpu_graph,
                                                  BOARDS[target.cpu]))
        done.append(replace(b, cpu_verify=_cpu_verify(plan, build, b, runtime, target)))
    return done


def make_plan(config, build: Path) -> Plan:
    """Plan every target of a validated ``ProjectConfig`` under the build folder."""
    plan = Plan()
    for target_name, target in config.targets.items():
        plan._current = target_name
        builds = [_model_build(plan, build, target, m, config.models[m]) for m in target.models]
        runtime = plan.runtimes[target_name] = _runtime(plan, build, target)
        if runtime is not None and target.npu is None:
            builds = _cpu_builds(plan, build, target, runtime, builds)
        elif runtime is not None:
            if target.npu.fallback == "cpu" and target.cpu in BOARDS:
                builds = [replace(b, mixed_verify=_mixed_verify(plan, build, b, runtime, target))
                          for b in builds]
            if runtime.options["platform"] == "cortex_m" and target.ethosu_sdk:
                builds = [replace(b, firmware=_firmware(plan, build, runtime,
                                                        b.package or b.mixed, target.ethosu_sdk))
                          for b in builds]
        plan.targets[target_name] = builds
    for stage in sorted({inv.stage for inv in plan.invocations.values()}):
        plan.code[stage] = [str(p) for p in code_files(STAGES[stage])]
    return plan
