"""The npu: block (pipeline/config/npu.py): defaults per family, the vela.ini-driven lists,
Vela options and their argv.

Target bodies start at line 9 (conftest.HEADER); ``npu:`` is on line 10, its keys from 11.
"""

from __future__ import annotations

import textwrap

import pytest

from pipeline.config import NpuConfig
from pipeline.config import npu as npu_module
from pipeline.config.vela_ini import default_vela_ini

VELA_INI = default_vela_ini()
ALL_MODES = ("Sram_Only, Shared_Sram, Dedicated_Sram, Dedicated_Sram_256KB, Dedicated_Sram_384KB, "
             "Dedicated_Sram_512KB")
ALIGNMENT = "must be a power of two from 16 to 1073741824 (2**30, the most Vela takes);"


@pytest.fixture
def npu_yaml(target_yaml):
    def _npu_yaml(fields: str, cpu: str = "cortex-m55") -> str:
        return target_yaml(f"cpu: {cpu}\nnpu:\n" + textwrap.indent(textwrap.dedent(fields), "  "))
    return _npu_yaml


@pytest.mark.parametrize(("config", "system", "mode"), [
    ("ethos-u55-128", "Ethos_U55_High_End_Embedded", "Shared_Sram"),
    ("ethos-u65-256", "Ethos_U65_High_End", "Dedicated_Sram_384KB"),
    ("ethos-u85-256", "Ethos_U85_SYS_DRAM_Mid", "Sram_Only"),
])
def test_defaults_per_family(load, npu_yaml, config, system, mode):
    npu = load(npu_yaml(f"config: {config}")).targets["t"].npu
    assert (npu.system_config, npu.memory_mode, npu.config_file) == (system, mode, VELA_INI)
    assert (npu.optimise, npu.tensor_allocator, npu.cpu_tensor_alignment) == (
        "Performance", "HillClimb", 16)
    assert npu.arena_cache_size is None


@pytest.mark.parametrize("alignment", [16, 1024, 2**30])
def test_cpu_tensor_alignment_within_velas_range(load, npu_yaml, alignment):
    text = npu_yaml(f"config: ethos-u85-256\ncpu_tensor_alignment: {alignment}")
    npu = load(text).targets["t"].npu
    assert npu.vela_args()[npu.vela_args().index("--cpu-tensor-alignment") + 1] == str(alignment)


def test_family_and_macs():
    npu = NpuConfig(config="ethos-u85-1024")
    assert (npu.family, npu.macs) == ("u85", 1024)


def test_vela_args_cortex_m(load, npu_yaml):
    npu = load(npu_yaml("config: ethos-u55-128")).targets["t"].npu
    assert npu.vela_args() == [
        "--accelerator-config", "ethos-u55-128", "--config", str(VELA_INI),
        "--system-config", "Ethos_U55_High_End_Embedded", "--memory-mode", "Shared_Sram",
        "--optimise", "Performance", "--tensor-allocator", "HillClimb",
        "--cpu-tensor-alignment", "16", "--cop-format", "COP1"]


def test_vela_args_every_option(load, npu_yaml):
    npu = load(npu_yaml("""\
        config: ethos-u85-512
        system_config: Ethos_U85_SYS_DRAM_High
        memory_mode: Dedicated_Sram_512KB
        optimise: Size
        arena_cache_size: 262144
        tensor_allocator: Greedy
        cpu_tensor_alignment: 64
        """, cpu="cortex-a76")).targets["t"].npu
    assert npu.vela_args() == [
        "--accelerator-config", "ethos-u85-512", "--config", str(VELA_INI),
        "--system-config", "Ethos_U85_SYS_DRAM_High", "--memory-mode", "Dedicated_Sram_512KB",
        "--optimise", "Size", "--tensor-allocator", "Greedy", "--cpu-tensor-alignment", "64",
        "--cop-format", "COP2", "--arena-cache-size", "262144", "--separate-io-regions"]


@pytest.mark.parametrize(("config", "system", "mode"), [
    ("ethos-u55-64", "Ethos_U55_Deep_Embedded", "Sram_Only"),
    ("ethos-u65-512", "Ethos_U65_Mid_End", "Dedicated_Sram"),
    ("ethos-u65-256", "Ethos_U65_Embedded", "Shared_Sram"),
    ("ethos-u85-128", "Ethos_U85_SYS_Flash_Low", "Shared_Sram"),
    ("ethos-u85-2048", "Ethos_U85_SYS_DRAM_Low", "Dedicated_Sram_256KB"),
])
def test_valid_system_config_and_memory_mode(load, npu_yaml, config, system, mode):
    npu = load(npu_yaml(f"config: {config}\nsystem_config: {system}\nmemory_mode: {mode}"))
    assert npu.targets["t"].npu.memory_mode == mode


INVALID = [
    pytest.param("config: ethos-u55-128\nsystem_config: Ethos_U85_SYS_DRAM_Mid", [
        ("targets.yaml:12: targets.t.npu.system_config: must be one of Ethos_U55_Deep_Embedded, "
        "Ethos_U55_High_End_Embedded for ethos-u55-128; got 'Ethos_U85_SYS_DRAM_Mid' (it is an "
        "Ethos-U85 system config)")], id="system-config-of-another-family"),
    pytest.param("config: ethos-u85-256\nsystem_config: Ethos_U85_Fast", [
        ("targets.yaml:12: targets.t.npu.system_config: must be one of Ethos_U85_SYS_Flash_Low, "
        "Ethos_U85_SYS_Flash_High, Ethos_U85_SYS_DRAM_Low, Ethos_U85_SYS_DRAM_Mid, "
        "Ethos_U85_SYS_DRAM_High for ethos-u85-256; got 'Ethos_U85_Fast' "
        "(no [System_Config.Ethos_U85_Fast] in vela.ini)")], id="system-config-not-in-ini"),
    pytest.param("config: ethos-u55-128\nmemory_mode: Dedicated_Sram", [
        ("targets.yaml:12: targets.t.npu.memory_mode: must be one of Sram_Only, Shared_Sram for "
        "ethos-u55-128 with Ethos_U55_High_End_Embedded; got 'Dedicated_Sram' (Dedicated_Sram "
        "puts the arena on Axi1, which is read-only on Ethos-U55)")], id="u55-dedicated-sram"),
    pytest.param("config: ethos-u65-256\nsystem_config: Ethos_U65_Embedded", [
        ("targets.yaml:12: targets.t.npu.memory_mode (default): must be one of Sram_Only, "
         "Shared_Sram for ethos-u65-256 with Ethos_U65_Embedded; got 'Dedicated_Sram_384KB' "
         "(Dedicated_Sram_384KB puts the arena in OffChipFlash of Ethos_U65_Embedded; Vela needs "
         "Sram or Dram)")],
        id="u65-default-mode-needs-dram"),
    pytest.param("config: ethos-u85-256\nsystem_config: Ethos_U85_SYS_Flash_High\n"
                 "memory_mode: Dedicated_Sram_384KB", [
        ("targets.yaml:13: targets.t.npu.memory_mode: must be one of Sram_Only, Shared_Sram for "
        "ethos-u85-256 with Ethos_U85_SYS_Flash_High; got 'Dedicated_Sram_384KB' "
        "(Dedicated_Sram_384KB puts the arena in OffChipFlash of Ethos_U85_SYS_Flash_High; Vela "
        "needs Sram or Dram)")], id="u85-flash-system-has-no-dram"),
    pytest.param("config: ethos-u85-256\nmemory_mode: Shared", [
        (f"targets.yaml:12: targets.t.npu.memory_mode: must be one of {ALL_MODES} for "
        "ethos-u85-256 with Ethos_U85_SYS_DRAM_Mid; got 'Shared' (no [Memory_Mode.Shared] in "
        "vela.ini)")], id="memory-mode-not-in-ini"),
    pytest.param("config: ethos-u85-256\ncpu_tensor_alignment: 8", [
        f"targets.yaml:12: targets.t.npu.cpu_tensor_alignment: {ALIGNMENT} got 8"],
        id="alignment-small"),
    pytest.param("config: ethos-u85-256\ncpu_tensor_alignment: 48", [
        f"targets.yaml:12: targets.t.npu.cpu_tensor_alignment: {ALIGNMENT} got 48"],
        id="alignment-not-power-of-two"),
    # Vela's C++ core reads the value as a signed 32-bit int: 2**31 wraps to 0 and fails there.
    pytest.param("config: ethos-u85-256\ncpu_tensor_alignment: 2147483648", [
        f"targets.yaml:12: targets.t.npu.cpu_tensor_alignment: {ALIGNMENT} got 2147483648"],
        id="alignment-past-vela-int32"),
    pytest.param("config: ethos-u85-256\ncpu_tensor_alignment: 4611686018427387904", [
        f"targets.yaml:12: targets.t.npu.cpu_tensor_alignment: {ALIGNMENT} "
        "got 4611686018427387904"], id="alignment-2-to-62"),
    pytest.param("config: ethos-u55-128\narena_cache_size: 8589934592", [
        ("targets.yaml:12: targets.t.npu.arena_cache_size: must be <= 4294967296 for "
        "ethos-u55-128; got 8589934592")], id="arena-over-32-bit"),
    pytest.param("config: ethos-u85-256\narena_cache_size: -1", [
        "targets.yaml:12: targets.t.npu.arena_cache_size: must be >= 0; got -1"], id="arena-neg"),
    pytest.param("config: ethos-u85-256\noptimise: Speed\ntensor_allocator: Fast", [
        "targets.yaml:12: targets.t.npu.optimise: must be one of Performance, Size; got 'Speed'",
        ("targets.yaml:13: targets.t.npu.tensor_allocator: must be one of LinearAlloc, Greedy, "
        "HillClimb; got 'Fast'")], id="literals"),
    pytest.param("config: ethos-u85-256\nseparate_io_regions: 'yes'", [
        "targets.yaml:12: targets.t.npu.separate_io_regions: must be true or false; got 'yes'"],
        id="strict-bool"),
    pytest.param("config: ethos-u85-256\nconfig_file: vela.cfg", [
        ("targets.yaml:12: targets.t.npu.config_file: must be a Vela configuration file ending in "
        ".ini; got 'vela.cfg'")], id="ini-suffix"),
    pytest.param("system_config: Ethos_U85_SYS_DRAM_Mid", [
        "targets.yaml:10: targets.t.npu.config: must be set; got nothing"], id="config-missing"),
]


@pytest.mark.parametrize(("fields", "expected"), INVALID)
def test_invalid_npu(issues, npu_yaml, fields, expected):
    assert issues(npu_yaml(fields)) == expected


CUSTOM_INI = """\
[System_Config.Board_A]
core_clock=400e6
axi0_port=Sram
axi1_port=Dram

[System_Config.Ethos_U65_Lab]
axi0_port=Sram
axi1_port=Dram

[Memory_Mode.Fast]
const_mem_area=Axi1
arena_mem_area=Axi0
cache_mem_area=Axi0

[Memory_Mode.Spill]
inherit=Memory_Mode.Fast
arena_mem_area=Axi1
"""


def test_allowed_lists_come_from_the_config_file(load, issues, npu_yaml, project):
    (project / "board.ini").write_text(CUSTOM_INI)
    npu = load(npu_yaml("config: ethos-u85-256\nconfig_file: board.ini\n"
                        "system_config: Board_A\nmemory_mode: Spill")).targets["t"].npu
    assert (npu.config_file, npu.memory_mode) == (project / "board.ini", "Spill")
    assert issues(npu_yaml("config: ethos-u85-256\nconfig_file: board.ini")) == [
        ("targets.yaml:12: targets.t.npu.system_config (default): must be one of Board_A for "
         "ethos-u85-256; got 'Ethos_U85_SYS_DRAM_Mid' (no [System_Config.Ethos_U85_SYS_DRAM_Mid] "
         "in board.ini)")]
    assert issues(npu_yaml("config: ethos-u55-128\nconfig_file: board.ini\n"
                           "system_config: Board_A\nmemory_mode: Spill")) == [
        ("targets.yaml:14: targets.t.npu.memory_mode: must be one of Fast for ethos-u55-128 with "
        "Board_A; got 'Spill' (Spill puts the arena on Axi1, which is read-only on Ethos-U55)")]


@pytest.mark.parametrize(("text", "reason"), [
    pytest.param("core_clock=1\n", "it is not a valid Vela configuration (File contains no "
                 "section headers. file: '{path}', line: 1 'core_clock=1\\n')", id="no-section"),
    pytest.param("[Memory_Mode.A]\ninherit=Memory_Mode.A\n", "it is not a valid Vela "
                 "configuration ([Memory_Mode.A] inherits from itself)", id="inherit-loop"),
    pytest.param("[Memory_Mode.A]\ninherit=Memory_Mode.B\n", "it is not a valid Vela "
                 "configuration ([Memory_Mode.A] inherits from missing [Memory_Mode.B])",
                 id="inherit-missing"),
])
def test_broken_config_file(issues, npu_yaml, project, text, reason):
    (project / "bad.ini").write_text(text)
    reason = reason.format(path=project / "bad.ini")
    assert issues(npu_yaml("config: ethos-u85-256\nconfig_file: bad.ini")) == [
        (f"targets.yaml:12: targets.t.npu.config_file: must be a Vela configuration file; got "
        f"'bad.ini': {reason}")]


def test_missing_config_file(issues, npu_yaml, project):
    assert issues(npu_yaml("config: ethos-u85-256\nconfig_file: cfg/vela.ini")) == [
        (f"targets.yaml:12: targets.t.npu.config_file: must be an existing file; got "
        f"'cfg/vela.ini' ({project / 'cfg' / 'vela.ini'} does not exist)")]


def test_vela_not_installed(issues, npu_yaml, monkeypatch):
    monkeypatch.setattr(npu_module, "default_vela_ini", lambda: None)
    assert issues(npu_yaml("config: ethos-u85-256")) == [
        ("targets.yaml:10: targets.t.npu.config_file: must be given: ethos-u-vela is not "
        "installed, so there is no default vela.ini; got nothing")]


def test_config_file_path_the_system_refuses(issues, npu_yaml):
    found = issues(npu_yaml(f"config: ethos-u55-128\nconfig_file: {'v' * 300}.ini"))
    assert found == [
        (f"targets.yaml:12: targets.t.npu.config_file: must be a path the system can look up; "
         f"got '{'v' * 99}… (306 characters) (File name too long: a name in it has 304 bytes, "
         "over the system's 255)")]
