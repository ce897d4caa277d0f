"""Targets and the whole project, fully resolved (defaults and ``extends`` already applied)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from pipeline.config.base import Broken, RuledModel, StrictModel, broken, show, unknown
from pipeline.config.cpus import CPUS, Cpu, CpuInfo, Isa, cpu_flags
from pipeline.config.models import ModelConfig, as_tuple
from pipeline.config.npu import NpuConfig
from pipeline.config.paths import EthosuSdkDir
from pipeline.config.tosa_spec import DEFAULT_TOSA, TosaField, TosaSpec
from pipeline.config.vela_ini import accelerator_family
from pipeline.config.vgf import VGF_SPECS, VgfConfig

Platform = Literal["baremetal", "linux", "host"]
Toolchain = Literal["arm-none-eabi-gcc", "aarch64-linux-gnu-gcc", "aarch64-linux-musl-zig", "host"]
Quantization = Literal["int8", "a16w8", "none"]
BuildType = Literal["Release", "Debug", "RelWithDebInfo", "MinSizeRel"]

# What each kind of CPU runs and is built with; the first toolchain is the default.
KIND_PLATFORM = {"cortex-m": "baremetal", "cortex-a": "linux", "host": "host"}
KIND_TOOLCHAINS = {
    "cortex-m": ("arm-none-eabi-gcc",),
    "cortex-a": ("aarch64-linux-gnu-gcc", "aarch64-linux-musl-zig"),
    "host": ("host",),
}
_PAIRING = {
    kind: f"{label} goes with platform {KIND_PLATFORM[kind]} and toolchain "
          f"{' or '.join(KIND_TOOLCHAINS[kind])}"
    for kind, label in (("cortex-m", "Cortex-M"), ("cortex-a", "Cortex-A"), ("host", "cpu host"))
}
# Which CPUs drive which NPU: U55 only from a Cortex-M; U65 and U85 also from Cortex-A
# Linux (direct drive, through the Ethos-U kernel driver).
NPU_DRIVERS = {
    "u55": ("cortex-m",), "u65": ("cortex-m", "cortex-a"), "u85": ("cortex-m", "cortex-a"),
}
# The driver payload each CPU's Ethos-U driver takes: (cop_format, separate_io_regions).
KIND_PAYLOAD = {"cortex-m": ("COP1", False), "cortex-a": ("COP2", True)}
_PAYLOAD_WHY = {
    ("cortex-m", "cop_format"): "the Ethos-U core driver only accepts COP1",
    ("cortex-m", "separate_io_regions"): "separate IO regions need COP2, which the Ethos-U "
                                         "core driver does not accept",
    ("cortex-a", "cop_format"): "Linux direct drive only accepts COP2",
    ("cortex-a", "separate_io_regions"): "Linux direct drive passes inputs and outputs as "
                                         "buffers of their own",
    ("ethosu-driver-stack", "cop_format"): "the driver stack's kernel driver parses COP2 in "
                                           "direct mode",
    ("ethosu-driver-stack", "separate_io_regions"): "the driver stack passes inputs and outputs "
                                                    "as buffers of their own (regions 3 and 4)",
}
# The stack's direct mode is what Arm builds and runs for an Ethos-U85 (Corstone-1000); the
# DRM accel driver takes U65 and U85 (NPU_DRIVERS).
DRIVER_STACK_FAMILY = "u85"


class TargetConfig(RuledModel):
    """One build target, every default filled in.

    Derived defaults: ``isa`` (the CPU's best level; None off Cortex-M), ``platform`` and
    ``toolchain`` (from the CPU kind), ``npu.cop_format``/``npu.separate_io_regions`` (from
    the CPU kind), ``quantization`` (``int8`` for the INT profile, ``none`` for FP).

    Attributes:
        description: free text.
        cpu: the application CPU.
        isa: Cortex-M ISA level (``scalar`` < ``dsp`` < ``mve``), None for Cortex-A and host.
        platform: ``baremetal`` (Cortex-M), ``linux`` (Cortex-A) or ``host``.
        toolchain: compiler family used for the runtime.
        npu: the Ethos-U, or None to run on the CPU (TOSA reference on the host); required
            (``null`` for none), from the target, its ``extends`` chain or ``defaults``.
        vgf: a Vulkan ML device taking a ``.vgf`` instead of an Ethos-U (``npu`` then null,
            its default): a Cortex-A Linux CPU, tosa ``TOSA-1.0+FP`` or ``TOSA-1.0+INT[+int16]``.
        tosa: TOSA spec the graph is lowered to.
        quantization: ``int8``, ``a16w8`` (int16 activations, int8 weights) or ``none``.
        build_type: CMake build type of the runtime.
        ethosu_sdk: absolute path of the Ethos-U core driver SDK for bare-metal builds, or None;
            it must hold the core driver (``include/ethosu_driver.h`` and ``CMakeLists.txt``)
            where the firmware build looks for it.
        models: names of entries under ``models:``, at least one.
    """

    description: str = ""
    cpu: Cpu
    isa: Isa | None = None
    platform: Platform = Field(default=None)
    toolchain: Toolchain = Field(default=None)
    npu: NpuConfig | None
    vgf: VgfConfig | None = None
    tosa: TosaField = DEFAULT_TOSA
    quantization: Quantization = Field(default=None)
    build_type: BuildType = "Release"
    ethosu_sdk: EthosuSdkDir | None = None
    models: Annotated[tuple[str, ...], BeforeValidator(as_tuple), Field(min_length=1)]

    @property
    def cpu_info(self) -> CpuInfo:
        """The CPU's entry in ``pipeline.config.cpus.CPUS``."""
        return CPUS[self.cpu]

    def cpu_flags(self) -> list[str]:
        """Compiler flags for this CPU, ISA and toolchain (see ``cpus.cpu_flags``)."""
        return cpu_flags(self.cpu, self.isa, self.toolchain)

    @classmethod
    def _fill_defaults(cls, data, context):
        info = CPUS.get(data["cpu"]) if isinstance(data.get("cpu"), str) else None
        if info is not None:
            if info.kind == "cortex-m" and data.get("isa") is None:
                data["isa"] = info.default_isa
            data.setdefault("platform", KIND_PLATFORM[info.kind])
            data.setdefault("toolchain", KIND_TOOLCHAINS[info.kind][0])
            if isinstance(data.get("npu"), dict) and info.kind in KIND_PAYLOAD:
                cop, separate = KIND_PAYLOAD[info.kind]
                linux = {"driver": "accel"} if info.kind == "cortex-a" else {}
                data["npu"] = {"cop_format": cop, "separate_io_regions": separate, **linux,
                               **data["npu"]}
        if data.get("vgf") is not None:
            data.setdefault("npu", None)  # a VGF target has no Ethos-U
        tosa = data.get("tosa", str(DEFAULT_TOSA))
        try:
            profile = TosaSpec.parse(tosa).profile if isinstance(tosa, str) else tosa.profile
        except (ValueError, AttributeError):
            return data
        data.setdefault("quantization", "int8" if profile == "INT" else "none")
        return data

    @classmethod
    def _rules(cls, v, context) -> Iterator[Broken]:
        if "cpu" in v:
            yield from _cpu_rules(v, CPUS[v["cpu"]])
        yield from _quantization_rules(v)
        if v.get("vgf") is not None:
            yield from _vgf_rules(v)
        names = context.get("model_names")
        if names is not None:
            yield from _model_rules(v.get("models", ()), names)


def _cpu_rules(v: dict[str, Any], info: CpuInfo) -> Iterator[Broken]:
    kind = info.kind
    cpu = "cpu host" if kind == "host" else info.name
    isa = v.get("isa")
    if kind != "cortex-m" and isa is not None:
        yield broken(f"must be null for {cpu} (isa is for Cortex-M only); got {show(isa)}", "isa")
    elif kind == "cortex-m" and "isa" in v and isa not in info.isas:
        note = f" (the DSP extension is always part of {cpu})" if info.isas == ("dsp",) else ""
        yield broken(f"must be {' or '.join(info.isas)} for {cpu}{note}; got {show(isa)}", "isa")
    if v.get("platform", KIND_PLATFORM[kind]) != KIND_PLATFORM[kind]:
        yield broken(f"must be {KIND_PLATFORM[kind]} for {cpu} ({_PAIRING[kind]}); "
                     f"got {show(v['platform'])}", "platform", "cpu")
    if v.get("toolchain", KIND_TOOLCHAINS[kind][0]) not in KIND_TOOLCHAINS[kind]:
        yield broken(f"must be {' or '.join(KIND_TOOLCHAINS[kind])} for {cpu} "
                     f"({_PAIRING[kind]}); got {show(v['toolchain'])}", "toolchain", "cpu")
    if v.get("npu") is not None:
        yield from _npu_rules(v, info, v["npu"])


def _npu_rules(v: dict[str, Any], info: CpuInfo, npu: NpuConfig) -> Iterator[Broken]:
    # npu may be a Partial (some of its fields failed): a field that failed reads None.
    cpu, kind = info.name, info.kind
    if kind == "host":
        yield broken(f"must be null for cpu host (the host cannot drive an Ethos-U); "
                     f"got {show(npu.config) if npu.config else 'an npu block'}", "npu")
        return
    if npu.config is not None and kind not in NPU_DRIVERS[accelerator_family(npu.config)]:
        yield broken(f"must be an ethos-u65-* or ethos-u85-* for {cpu} (Ethos-U55 is driven "
                     f"from a Cortex-M only); got {show(npu.config)}", "npu.config", "cpu")
    yield from _driver_rules(info, npu)
    why = "ethosu-driver-stack" if npu.driver == "ethosu-driver-stack" else kind
    for field, expected in zip(("cop_format", "separate_io_regions"), KIND_PAYLOAD[kind]):
        got = getattr(npu, field)
        if got is not None and got != expected:
            shown = show(expected) if isinstance(expected, bool) else expected
            yield broken(f"must be {shown} for {cpu} "
                         f"({_PAYLOAD_WHY[why, field]}); got {show(got)}", f"npu.{field}", "cpu")
    tosa = v.get("tosa")
    if tosa is not None and tosa.profile != "INT":
        yield broken(f"must use the INT profile when npu is set (Ethos-U runs integer graphs "
                     f"only); got {show(str(tosa))}", "tosa", "npu")


def _driver_rules(info: CpuInfo, npu: NpuConfig) -> Iterator[Broken]:
    if npu.driver is not None and info.kind != "cortex-a":
        yield broken(f"must be null for {info.name} (a Cortex-M drives the NPU through the "
                     f"Ethos-U core driver; accel and ethosu-driver-stack are Linux drivers for "
                     f"a Cortex-A); got {show(npu.driver)}", "npu.driver", "cpu")
    elif (npu.driver == "ethosu-driver-stack" and npu.config is not None
          and accelerator_family(npu.config) != DRIVER_STACK_FAMILY):
        yield broken(f"must be an ethos-u85-* with driver ethosu-driver-stack (the driver "
                     f"stack's direct mode drives an Ethos-U85); got {show(npu.config)}",
                     "npu.config", "npu.driver")


def _quantization_rules(v: dict[str, Any]) -> Iterator[Broken]:
    tosa, scheme = v.get("tosa"), v.get("quantization")
    if tosa is None or scheme is None:
        return
    if tosa.profile == "FP" and scheme != "none":
        yield broken(f"must be none with {tosa} (an FP graph is not quantized); "
                     f"got {show(scheme)}", "quantization", "tosa")
    elif tosa.profile == "INT" and scheme == "none":
        yield broken(f"must be int8 or a16w8 with {tosa} (an INT graph is quantized); got 'none'."
                     f" For a float graph use tosa: TOSA-1.0+FP", "quantization", "tosa")
    elif scheme == "a16w8" and not tosa.has("int16"):
        yield broken(f"must be int8 unless tosa has the int16 extension; got 'a16w8' with "
                     f"{tosa}. Use tosa: {tosa}+int16", "quantization", "tosa")


def _vgf_rules(v: dict[str, Any]) -> Iterator[Broken]:
    if v.get("npu") is not None:
        yield broken("must be null when vgf is set (a target deploys to one family: Ethos-U "
                     "or a Vulkan ML device); got an npu block", "npu", "vgf")
    info = CPUS.get(v.get("cpu"))
    if info is not None and info.kind != "cortex-a":
        yield broken(f"must be a Cortex-A (Linux) CPU with vgf (a Vulkan ML device is driven "
                     f"from Linux); got {show(info.name)}", "cpu", "vgf")
    tosa = v.get("tosa")
    if tosa is not None and str(tosa) not in VGF_SPECS:
        yield broken(f"must be one of {', '.join(VGF_SPECS)} with vgf (the specs the ML SDK "
                     f"model converter takes from this lowering); got {show(str(tosa))}",
                     "tosa", "vgf")


def _model_rules(models: tuple[str, ...], names) -> Iterator[Broken]:
    known, seen = set(names), set()
    for index, name in enumerate(models):
        if name not in known:
            yield broken(unknown("model", name, names, named=True), f"models.{index}")
        elif name in seen:
            yield broken(f"must name each model once; got {show(name)} again", f"models.{index}")
        seen.add(name)


class ProjectConfig(StrictModel):
    """A loaded targets.yaml.

    Attributes:
        path: absolute path of the YAML file.
        models: model name -> model.
        targets: target name -> fully resolved target.
    """

    path: Path
    models: dict[str, ModelConfig]
    targets: dict[str, TargetConfig]
