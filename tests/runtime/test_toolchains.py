"""The toolchain files turn ETHOSU_RT_CPU/ETHOSU_RT_ISA into the same compiler flags as the
config's CPU table (pipeline/config/cpus.py), and refuse what a CPU does not have."""

from __future__ import annotations

import pytest

from pipeline.config.cpus import CPUS, cpu_flags
from tests.runtime.runtime_helpers import TOOLCHAINS, require, run


def _flags(tmp_path, toolchain: str, cpu: str, isa: str | None):
    script = tmp_path / "print_flags.cmake"
    script.write_text('include("${TOOLCHAIN}")\nmessage("FLAGS=${CMAKE_CXX_FLAGS_INIT}")\n')
    result = run([require("cmake"), f"-DTOOLCHAIN={TOOLCHAINS / (toolchain + '.cmake')}",
                  f"-DETHOSU_RT_CPU={cpu}", f"-DETHOSU_RT_ISA={isa or ''}", "-P", script],
                 check=False)
    return result


_CORTEX_M = [(cpu, isa) for cpu, info in CPUS.items() if info.kind == "cortex-m"
             for isa in info.isas]
_CORTEX_A = [cpu for cpu, info in CPUS.items() if info.kind == "cortex-a"]


@pytest.mark.parametrize("cpu, isa", _CORTEX_M)
def test_cortex_m_flags_match_the_cpu_table(tmp_path, cpu, isa):
    result = _flags(tmp_path, "arm-none-eabi-gcc", cpu, isa)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "FLAGS=" + " ".join(cpu_flags(cpu, isa))


@pytest.mark.parametrize("toolchain", ["aarch64-linux-gnu-gcc", "aarch64-linux-musl-zig"])
@pytest.mark.parametrize("cpu", _CORTEX_A)
def test_cortex_a_flags_match_the_cpu_table(tmp_path, toolchain, cpu):
    result = _flags(tmp_path, toolchain, cpu, None)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "FLAGS=" + " ".join(cpu_flags(cpu, None, toolchain))


def test_an_isa_the_cpu_lacks_is_refused(tmp_path):
    result = _flags(tmp_path, "arm-none-eabi-gcc", "cortex-m4", "mve")
    assert result.returncode != 0
    assert "ETHOSU_RT_ISA must be one of dsp (or empty) for cortex-m4; got 'mve'" in result.stderr
    result = _flags(tmp_path, "arm-none-eabi-gcc", "cortex-m99", None)
    assert "ETHOSU_RT_CPU must be one of cortex-m0," in " ".join(result.stderr.split())
    result = _flags(tmp_path, "aarch64-linux-gnu-gcc", "cortex-a55", "dsp")
    assert "ETHOSU_RT_ISA must be empty for aarch64-linux-gnu" in result.stderr
