"""CPU facts the config checks and the CMake toolchains need, in one table.

Cortex-M ISA levels nest: ``scalar`` (no DSP, no MVE) < ``dsp`` (DSP extension) < ``mve``
(Helium, M-profile vector extension with floating point). Compiler flags target the
compilers this project installs: arm-none-eabi-gcc 12.2, aarch64-linux-gnu-gcc 12.2 and
ziglang's clang (``-target aarch64-linux-musl``). Every flag set below was checked with
``-dM -E`` against those compilers (see tests/config/test_cpus.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Cpu = Literal[
    "cortex-m0", "cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m23",
    "cortex-m33", "cortex-m35p", "cortex-m52", "cortex-m55", "cortex-m85",
    "cortex-a53", "cortex-a55", "cortex-a72", "cortex-a76", "cortex-a320",
    "host",
]
Isa = Literal["scalar", "dsp", "mve"]
CpuKind = Literal["cortex-m", "cortex-a", "host"]


@dataclass(frozen=True)
class CpuInfo:
    """What one CPU is and how compilers are told about it.

    Attributes:
        name: the ``cpu:`` value in targets.yaml.
        kind: ``cortex-m`` (bare metal), ``cortex-a`` (Linux) or ``host``.
        arch: the architecture, spelled as gcc's ``-march`` base.
        isas: the ISA levels a target may ask for, lowest first (empty: ``isa`` must be null).
        default_isa: the level used when ``isa`` is omitted (the most the core offers).
        float_abi: ``soft`` or ``hard`` for Cortex-M; None where the ABI is fixed.
        fpu: gcc ``-mfpu`` value, None where the FPU comes from ``-mcpu``/``-march`` or is absent.
        gcc_cpu: ``-mcpu`` name gcc 12 accepts; None where gcc 12 needs ``-march`` instead.
    """

    name: str
    kind: CpuKind
    arch: str
    isas: tuple[Isa, ...] = ()
    default_isa: Isa | None = None
    float_abi: Literal["soft", "hard"] | None = None
    fpu: str | None = None
    gcc_cpu: str | None = None


def _m(name, arch, isas, float_abi, fpu=None, gcc_cpu=True) -> CpuInfo:
    return CpuInfo(name, "cortex-m", arch, isas, isas[-1], float_abi, fpu,
                   name if gcc_cpu else None)


_SCALAR: tuple[Isa, ...] = ("scalar",)
# M4/M7: the DSP extension is part of the core, and gcc 12 has no "+nodsp" for them
# ("'cortex-m4' does not support feature 'nodsp'"), so "scalar" could not be honoured.
_DSP_ONLY: tuple[Isa, ...] = ("dsp",)
_DSP_OPTIONAL: tuple[Isa, ...] = ("scalar", "dsp")
_MVE_OPTIONAL: tuple[Isa, ...] = ("scalar", "dsp", "mve")

CPUS: dict[str, CpuInfo] = {c.name: c for c in (
    _m("cortex-m0", "armv6-m", _SCALAR, "soft"),
    _m("cortex-m0plus", "armv6-m", _SCALAR, "soft"),
    _m("cortex-m3", "armv7-m", _SCALAR, "soft"),
    _m("cortex-m23", "armv8-m.base", _SCALAR, "soft"),
    _m("cortex-m4", "armv7e-m", _DSP_ONLY, "hard", "fpv4-sp-d16"),
    _m("cortex-m7", "armv7e-m", _DSP_ONLY, "hard", "fpv5-d16"),
    _m("cortex-m33", "armv8-m.main", _DSP_OPTIONAL, "hard", "fpv5-sp-d16"),
    _m("cortex-m35p", "armv8-m.main", _DSP_OPTIONAL, "hard", "fpv5-sp-d16"),
    # gcc 12.2 rejects -mcpu=cortex-m52 (added in gcc 14) and -mcpu=cortex-m85 (gcc 13);
    # the -march forms below are what those -mcpu names expand to (FPU with double precision).
    _m("cortex-m52", "armv8.1-m.main", _MVE_OPTIONAL, "hard", gcc_cpu=False),
    _m("cortex-m55", "armv8.1-m.main", _MVE_OPTIONAL, "hard"),
    _m("cortex-m85", "armv8.1-m.main", _MVE_OPTIONAL, "hard", gcc_cpu=False),
    CpuInfo("cortex-a53", "cortex-a", "armv8-a", gcc_cpu="cortex-a53"),
    CpuInfo("cortex-a55", "cortex-a", "armv8.2-a", gcc_cpu="cortex-a55"),
    CpuInfo("cortex-a72", "cortex-a", "armv8-a", gcc_cpu="cortex-a72"),
    CpuInfo("cortex-a76", "cortex-a", "armv8.2-a", gcc_cpu="cortex-a76"),
    # gcc 12 knows neither -mcpu=cortex-a320 (gcc 15) nor -march=armv9.2-a (gcc 13).
    CpuInfo("cortex-a320", "cortex-a", "armv9.2-a"),
    CpuInfo("host", "host", "x86-64"),
)}

# -mcpu suffixes that take a Cortex-M down to a lower ISA level (gcc 12; "+nodsp" on the
# M55 also removes MVE, which needs DSP).
_MCPU_SUFFIX = {
    ("cortex-m33", "scalar"): "+nodsp", ("cortex-m35p", "scalar"): "+nodsp",
    ("cortex-m55", "dsp"): "+nomve", ("cortex-m55", "scalar"): "+nodsp",
}
# -march for v8.1-M cores gcc 12 cannot name: -mcpu=cortex-m85 / cortex-m52 equal the first.
_V81M_MARCH = {
    "mve": "armv8.1-m.main+mve.fp+fp.dp",
    "dsp": "armv8.1-m.main+dsp+fp.dp",
    "scalar": "armv8.1-m.main+fp.dp",
}
# Closest architecture gcc 12 accepts for a Cortex-A it cannot name with -mcpu.
_GCC12_A_MARCH = {"cortex-a320": "armv9-a"}


def cpu_info(cpu: str) -> CpuInfo:
    """Return the table entry for ``cpu``.

    Raises:
        KeyError: ``cpu`` is not one of ``Cpu``.
    """
    return CPUS[cpu]


def cpu_flags(cpu: str, isa: str | None = None, toolchain: str | None = None) -> list[str]:
    """Compiler flags that select ``cpu`` at ISA level ``isa``.

    Args:
        cpu: a ``Cpu`` name.
        isa: for Cortex-M, one of the CPU's ``isas`` (None: its default); else None.
        toolchain: for Cortex-A, ``aarch64-linux-musl-zig`` selects zig's spelling
            (``-mcpu=cortex_a55``); anything else means gcc 12.
    Returns:
        argv fragments, e.g. ``['-mthumb', '-mcpu=cortex-m55', '-mfloat-abi=hard']``;
        empty for ``host``.
    Raises:
        KeyError: unknown ``cpu``.
        ValueError: ``isa`` is not allowed for ``cpu``.
    """
    info = CPUS[cpu]
    if info.kind != "cortex-m":
        if isa is not None:
            raise ValueError(f"isa must be None for {cpu}; got {isa!r}")
        return _application_flags(info, toolchain)
    isa = isa or info.default_isa
    if isa not in info.isas:
        raise ValueError(f"isa must be one of {', '.join(info.isas)} for {cpu}; got {isa!r}")
    if info.gcc_cpu is None:
        flags = ["-mthumb", f"-march={_V81M_MARCH[isa]}"]
    else:
        flags = ["-mthumb", f"-mcpu={info.gcc_cpu}{_MCPU_SUFFIX.get((cpu, isa), '')}"]
    if info.fpu:
        flags.append(f"-mfpu={info.fpu}")
    return [*flags, f"-mfloat-abi={info.float_abi}"]


def _application_flags(info: CpuInfo, toolchain: str | None) -> list[str]:
    if info.kind == "host":
        return []
    if toolchain == "aarch64-linux-musl-zig":
        return [f"-mcpu={info.name.replace('-', '_')}"]
    if info.gcc_cpu is None:
        return [f"-march={_GCC12_A_MARCH[info.name]}"]
    return [f"-mcpu={info.gcc_cpu}"]

