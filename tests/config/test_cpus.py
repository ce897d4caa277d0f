"""The CPU table and compiler flags (pipeline/config/cpus.py)."""

from __future__ import annotations

import subprocess
import sys
from typing import get_args

import pytest

from pipeline.config.cpus import CPUS, Cpu, cpu_flags

HARD = "-mfloat-abi=hard"
V81M = "-march=armv8.1-m.main"

# Every Cortex-M x ISA level it allows -> arm-none-eabi-gcc 12 flags.
M_FLAGS = {
    ("cortex-m0", "scalar"): ["-mthumb", "-mcpu=cortex-m0", "-mfloat-abi=soft"],
    ("cortex-m0plus", "scalar"): ["-mthumb", "-mcpu=cortex-m0plus", "-mfloat-abi=soft"],
    ("cortex-m3", "scalar"): ["-mthumb", "-mcpu=cortex-m3", "-mfloat-abi=soft"],
    ("cortex-m23", "scalar"): ["-mthumb", "-mcpu=cortex-m23", "-mfloat-abi=soft"],
    ("cortex-m4", "dsp"): ["-mthumb", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", HARD],
    ("cortex-m7", "dsp"): ["-mthumb", "-mcpu=cortex-m7", "-mfpu=fpv5-d16", HARD],
    ("cortex-m33", "scalar"): ["-mthumb", "-mcpu=cortex-m33+nodsp", "-mfpu=fpv5-sp-d16", HARD],
    ("cortex-m33", "dsp"): ["-mthumb", "-mcpu=cortex-m33", "-mfpu=fpv5-sp-d16", HARD],
    ("cortex-m35p", "scalar"): ["-mthumb", "-mcpu=cortex-m35p+nodsp", "-mfpu=fpv5-sp-d16", HARD],
    ("cortex-m35p", "dsp"): ["-mthumb", "-mcpu=cortex-m35p", "-mfpu=fpv5-sp-d16", HARD],
    ("cortex-m52", "scalar"): ["-mthumb", f"{V81M}+fp.dp", HARD],
    ("cortex-m52", "dsp"): ["-mthumb", f"{V81M}+dsp+fp.dp", HARD],
    ("cortex-m52", "mve"): ["-mthumb", f"{V81M}+mve.fp+fp.dp", HARD],
    ("cortex-m55", "scalar"): ["-mthumb", "-mcpu=cortex-m55+nodsp", HARD],
    ("cortex-m55", "dsp"): ["-mthumb", "-mcpu=cortex-m55+nomve", HARD],
    ("cortex-m55", "mve"): ["-mthumb", "-mcpu=cortex-m55", HARD],
    ("cortex-m85", "scalar"): ["-mthumb", f"{V81M}+fp.dp", HARD],
    ("cortex-m85", "dsp"): ["-mthumb", f"{V81M}+dsp+fp.dp", HARD],
    ("cortex-m85", "mve"): ["-mthumb", f"{V81M}+mve.fp+fp.dp", HARD],
}
A_FLAGS = {  # cpu -> (aarch64-linux-gnu-gcc 12, zig)
    "cortex-a53": (["-mcpu=cortex-a53"], ["-mcpu=cortex_a53"]),
    "cortex-a55": (["-mcpu=cortex-a55"], ["-mcpu=cortex_a55"]),
    "cortex-a72": (["-mcpu=cortex-a72"], ["-mcpu=cortex_a72"]),
    "cortex-a76": (["-mcpu=cortex-a76"], ["-mcpu=cortex_a76"]),
    "cortex-a320": (["-march=armv9-a"], ["-mcpu=cortex_a320"]),
}
M_CASES = [pytest.param(cpu, isa, flags, id=f"{cpu}-{isa}")
           for (cpu, isa), flags in M_FLAGS.items()]


def test_literal_and_table_agree():
    assert set(get_args(Cpu)) == set(CPUS)
    kinds = {name: info.kind for name, info in CPUS.items()}
    assert {n for n, k in kinds.items() if k == "cortex-m"} == {c for c, _ in M_FLAGS}
    assert {n for n, k in kinds.items() if k == "cortex-a"} == set(A_FLAGS)


def test_every_allowed_isa_is_covered():
    allowed = {(name, isa) for name, info in CPUS.items() for isa in info.isas}
    assert allowed == set(M_FLAGS)


@pytest.mark.parametrize(("cpu", "isa", "flags"), M_CASES)
def test_cortex_m_flags(cpu, isa, flags):
    assert cpu_flags(cpu, isa) == flags


@pytest.mark.parametrize("cpu", [c for c, info in CPUS.items() if info.kind == "cortex-m"])
def test_default_isa_is_the_highest(cpu):
    info = CPUS[cpu]
    assert info.default_isa == info.isas[-1]
    assert cpu_flags(cpu) == cpu_flags(cpu, info.default_isa)


@pytest.mark.parametrize("cpu", A_FLAGS)
def test_cortex_a_flags(cpu):
    gcc, zig = A_FLAGS[cpu]
    assert cpu_flags(cpu) == gcc
    assert cpu_flags(cpu, toolchain="aarch64-linux-gnu-gcc") == gcc
    assert cpu_flags(cpu, toolchain="aarch64-linux-musl-zig") == zig


def test_host_has_no_flags():
    assert cpu_flags("host", toolchain="host") == []


@pytest.mark.parametrize(("cpu", "isa", "message"), [
    ("cortex-m4", "scalar", "isa must be one of dsp for cortex-m4; got 'scalar'"),
    ("cortex-m33", "mve", "isa must be one of scalar, dsp for cortex-m33; got 'mve'"),
    ("cortex-a55", "dsp", "isa must be None for cortex-a55; got 'dsp'"),
])
def test_disallowed_isa(cpu, isa, message):
    with pytest.raises(ValueError) as caught:
        cpu_flags(cpu, isa)
    assert str(caught.value) == message


def _predefined(compiler: list[str], flags: list[str]) -> dict[str, str]:
    result = subprocess.run([*compiler, *flags, "-dM", "-E", "-x", "c", "-"], input="",
                            capture_output=True, text=True, check=True)
    macros = {}
    for line in result.stdout.splitlines():  # "#define NAME VALUE"
        _, name, *value = line.split(" ", 2)
        macros[name] = value[0] if value else ""
    return macros


@pytest.mark.needs_arm_gcc
@pytest.mark.parametrize(("cpu", "isa", "flags"), M_CASES)
def test_arm_gcc_accepts_flags_and_gives_the_isa(cpu, isa, flags):
    macros = _predefined(["arm-none-eabi-gcc"], flags)
    assert ("__ARM_FEATURE_DSP" in macros) == (isa in ("dsp", "mve"))
    assert ("__ARM_FEATURE_MVE" in macros) == (isa == "mve")
    if isa == "mve":
        assert macros["__ARM_FEATURE_MVE"] == "3"  # integer and floating point
    assert ("__ARM_PCS_VFP" in macros) == (CPUS[cpu].float_abi == "hard")
    assert macros["__ARM_ARCH_PROFILE"] == "77"  # 'M'


@pytest.mark.needs_aarch64_gcc
@pytest.mark.parametrize("cpu", A_FLAGS)
def test_aarch64_gcc_accepts_flags(cpu):
    macros = _predefined(["aarch64-linux-gnu-gcc"], A_FLAGS[cpu][0])
    assert macros["__ARM_ARCH"] == ("9" if cpu == "cortex-a320" else "8")


@pytest.mark.needs_zig
@pytest.mark.parametrize("cpu", A_FLAGS)
def test_zig_accepts_flags(cpu):
    zig = [sys.executable, "-m", "ziglang", "cc", "-target", "aarch64-linux-musl"]
    assert "__aarch64__" in _predefined(zig, A_FLAGS[cpu][1])
