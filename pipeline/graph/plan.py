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
from pipeline.graph.imports import local_imports

PIPELINE_DIR = Path(__file__).resolve().parents[1]
REPO_DIR = PIPELINE_DIR.parent

# The source files whose content is each stage's code version (a change re-runs the stage).
STAGE_CODE = {
    # Normalisation keeps the operators that have a visitor: the operator files are its input.
    "export": ["stages/export.py", "stages/export_*.py", "normalise/*.py", "quant/**/*.py",
               "tosa/registry.py", "tosa/ops/*.py"],
    # Quantize normalises the exported program again (quant/flow.py): the same inputs as export's.
    "quantize": ["stages/quantize.py", "quant/**/*.py", "normalise/*.py", "tosa/registry.py",
                 "tosa/ops/*.py"],
    # The lowering driver normalises a float program itself (FP profile): normalise/, quant/;
    # tosa/spec.py reads spec strings with config/tosa_spec.py.
    "lower": ["stages/lower.py", "tosa/**/*.py", "normalise/*.py", "quant/**/*.py",
              "config/tosa_spec.py"],
    # Verify loads both programs with quant/program.py.
    "verify": ["stages/verify.py", "stages/verify_*.py", "tosa/**/*.py", "quant/program.py"],
    "vela": ["stages/vela.py", "tosa/npu_constraints.py"],
    "package": ["stages/package.py"],
    "runtime": ["stages/runtime_build.py"],
    "firmware": ["stages/runtime_build.py", "stages/c_array.py"],
}
# What a runtime build leaves for the target, per CMake platform. The bare-metal runner
# embeds one model, so it is a firmware task of its own (and needs the target's Ethos-U SDK).
RUNTIME_PRODUCTS = {
    "cortex_a": ("ethosu_runner", "libethosu_rt_common.a", "libethosu_rt_cortex_a.a"),
    "cortex_m": ("libethosu_rt_common.a", "libethosu_rt_cortex_m.a"),
}
CMAKE_PLATFORM = {"linux": "cortex_a", "baremetal": "cortex_m"}


def runtime_sources() -> list[Path]:
    """The runtime's sources and CMake files: a change to any of them rebuilds the runtime."""
    return list(_runtime_sources())


@functools.cache
def _runtime_sources() -> tuple[Path, ...]:
    # Listed once per process, not once per target: a build does not add sources as it plans.
    return tuple(sorted(p for d in ("runtime", "cmake") for p in (REPO_DIR / d).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts))


def code_files(stage: str) -> list[Path]:
    """The source files of one stage, sorted."""
    return list(_code_files(stage))


@functools.cache
def _code_files(stage: str) -> tuple[Path, ...]:
    # Globbed once per stage and process, not once per task (hundreds at team scale).
    files: set[Path] = set()
    for pattern in STAGE_CODE[stage]:
        files.update(p for p in PIPELINE_DIR.glob(pattern) if "__pycache__" not in p.parts)
    return tuple(sorted(files))


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


@dataclass
class Plan:
    invocations: dict[str, Invocation] = field(default_factory=dict)
    targets: dict[str, list[ModelBuild]] = field(default_factory=dict)
    runtimes: dict[str, Invocation | None] = field(default_factory=dict)  # target -> runtime
    users: dict[str, list[str]] = field(default_factory=dict)  # task -> targets needing it
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
    out = _stage_dir(build, "export", name)
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
    return plan.add(Invocation(
        "export", name, inputs=inputs,
        outputs={"model": out / "model.pt2", "calibration": out / "calibration.pt",
                 "test_inputs": out / "test_inputs.pt"},
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
            outputs={"model": _stage_dir(build, "quantize", name) / "model.pt2",
                     "record": _stage_dir(build, "quantize", name) / "quantize.json"},
            options=_quantize_options(scheme, model.calibration)))
        graph = quantize.outputs["model"]
    name = f"{model_name}/{scheme}/{spec}"
    out = _stage_dir(build, "lower", name)
    specs = model.input_specs or ()
    names = [s.name for s in specs] if specs and all(s.name for s in specs) else None
    # An INT graph also comes in one variant per NPU family (its own TOSA passes applied).
    from pipeline.config.npu import NPU_VARIANTS  # here: a cached plan needs no pydantic

    variants = NPU_VARIANTS if target.tosa.profile == "INT" else ()
    lower = plan.add(Invocation(
        "lower", name, inputs={"model": graph},
        outputs={"tosa": out / "model.tosa", "io": out / "io.json",
                 **{f"tosa_{v}": out / f"model.{v}.tosa" for v in variants}},
        options={"spec": spec, "input_names": names}))
    verify = plan.add(Invocation(
        "verify", name,
        inputs={"float_model": export.outputs["model"], "model": graph,
                "tosa": lower.outputs["tosa"], "io": lower.outputs["io"],
                "test_inputs": export.outputs["test_inputs"],
                **{f"tosa_{v}": lower.outputs[f"tosa_{v}"] for v in variants}},
        outputs={"report": _stage_dir(build, "verify", name) / "verify.json"}))
    if target.npu is None:
        return ModelBuild(model_name, lower, verify, None, None, quantize=quantize)
    npu = target.npu.model_dump(mode="json", exclude={"config_file"})  # its content is an input
    # The name tells apart two ini files with equal options; the key sees only their content.
    variant = options_digest({**npu, "config_file": str(target.npu.config_file)})
    name = f"{model_name}/{scheme}/{spec}/{target.npu.config}-{variant}"
    out = _stage_dir(build, "vela", name)
    vela = plan.add(Invocation(
        "vela", name,
        inputs={"tosa": lower.outputs[f"tosa_{target.npu.variant}"],
                "vela_ini": target.npu.config_file},
        outputs={"npz": out / "model_vela.npz", "summary": out / "summary.csv",
                 "layers": out / "per_layer.csv", "figures": out / "figures.json"},
        options={"npu": npu}, params={"vela_args": target.npu.vela_args()}))
    package = plan.add(Invocation(
        "package", name, inputs={"npz": vela.outputs["npz"], "io": lower.outputs["io"]},
        outputs={"artifact": _stage_dir(build, "package", name) / "model.bin"}))
    return ModelBuild(model_name, lower, verify, vela, package, quantize=quantize)


def _runtime(plan: Plan, build: Path, target) -> Invocation | None:
    """The runtime build a target needs: shared by every target with the same toolchain,
    CPU, ISA and build type; None for targets without an NPU to drive."""
    platform = CMAKE_PLATFORM.get(target.platform)
    if target.npu is None or platform is None:
        return None
    options = {"toolchain": target.toolchain, "cpu": target.cpu, "isa": target.isa,
               "platform": platform, "build_type": target.build_type}
    name = f"{target.toolchain}/{target.cpu}{'-' + target.isa if target.isa else ''}/{target.build_type}"
    out = _stage_dir(build, "runtime", name)
    return plan.add(Invocation(
        "runtime", name,
        inputs={str(p.relative_to(REPO_DIR)): p for p in runtime_sources()},
        outputs={n: out / "products" / n for n in RUNTIME_PRODUCTS[platform]},
        options=options, params={"cmake_dir": str(out / "cmake")}))


def _firmware(plan: Plan, build: Path, runtime: Invocation, package: Invocation,
              sdk: Path) -> Invocation:
    """Bare-metal firmware: the runner with one model artifact compiled in."""
    name = f"{package.name}/{runtime.name}/sdk-{options_digest({'sdk': str(sdk)})}"
    out = _stage_dir(build, "firmware", name)
    sdk_files = sorted(p for p in sdk.rglob("*") if p.is_file() and ".git" not in p.parts)
    return plan.add(Invocation(
        "firmware", name,
        inputs={"artifact": package.outputs["artifact"], **runtime.inputs,
                **{f"sdk/{p.relative_to(sdk)}": p for p in sdk_files}},
        outputs={"elf": out / "ethosu_runner.elf"},
        options=runtime.options,
        params={"cmake_dir": str(out / "cmake"), "ethosu_sdk": str(sdk)}))


def make_plan(config, build: Path) -> Plan:
    """Plan every target of a validated ``ProjectConfig`` under the build folder."""
    plan = Plan()
    for target_name, target in config.targets.items():
        plan._current = target_name
        builds = [_model_build(plan, build, target, m, config.models[m]) for m in target.models]
        runtime = plan.runtimes[target_name] = _runtime(plan, build, target)
        if runtime is not None and runtime.options["platform"] == "cortex_m" and target.ethosu_sdk:
            builds = [replace(b, firmware=_firmware(plan, build, runtime, b.package,
                                                    target.ethosu_sdk)) for b in builds]
        plan.targets[target_name] = builds
    return plan
