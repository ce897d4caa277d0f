"""Reading vela.ini without Vela (pipeline/config/vela_ini.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pipeline.config.vela_ini import (
    default_vela_ini,
    family_of,
    memory_mode_problem,
    memory_modes_for,
    read_vela_ini,
    system_configs_for,
)

INI = read_vela_ini(default_vela_ini())


def test_installed_ini_is_found_without_importing_vela():
    code = ("import sys; from pipeline.config.vela_ini import default_vela_ini; "
            "p = default_vela_ini(); assert p.name == 'vela.ini' and p.is_file(); "
            "assert 'ethosu.vela' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_sections_come_from_the_file():
    assert list(INI.system_configs) == [
        "Ethos_U55_Deep_Embedded", "Ethos_U55_High_End_Embedded", "Ethos_U65_Embedded",
        "Ethos_U65_Mid_End", "Ethos_U65_High_End", "Ethos_U65_Client_Server",
        "Ethos_U85_SYS_Flash_Low", "Ethos_U85_SYS_Flash_High", "Ethos_U85_SYS_DRAM_Low",
        "Ethos_U85_SYS_DRAM_Mid", "Ethos_U85_SYS_DRAM_High"]
    assert list(INI.memory_modes) == ["Sram_Only", "Shared_Sram", "Dedicated_Sram",
                                      "Dedicated_Sram_256KB", "Dedicated_Sram_384KB",
                                      "Dedicated_Sram_512KB"]


def test_inherit_is_resolved_and_keys_lower_cased():
    assert INI.memory_modes["Dedicated_Sram_384KB"] == {
        "const_mem_area": "Axi1", "arena_mem_area": "Axi1", "cache_mem_area": "Axi0",
        "arena_cache_size": "393216"}
    assert INI.system_configs["Ethos_U85_SYS_DRAM_Mid"]["axi1_port"] == "Dram"


@pytest.mark.parametrize(("name", "family"), [
    ("Ethos_U55_Deep_Embedded", "u55"), ("Ethos_U65_Mid_End", "u65"),
    ("Ethos_U85_SYS_DRAM_Mid", "u85"), ("My_Board", None), ("Ethos_U5_x", None)])
def test_family_of(name, family):
    assert family_of(name) == family


def test_system_configs_per_family():
    assert system_configs_for(INI, "u55") == ["Ethos_U55_Deep_Embedded",
                                              "Ethos_U55_High_End_Embedded"]
    assert len(system_configs_for(INI, "u65")) == 4
    assert len(system_configs_for(INI, "u85")) == 5


# Derived from the ini keys, not from the mode names; test_matches_vela checks it against Vela.
@pytest.mark.parametrize(("family", "system", "allowed"), [
    ("u55", "Ethos_U55_High_End_Embedded", ["Sram_Only", "Shared_Sram"]),
    ("u55", "Ethos_U55_Deep_Embedded", ["Sram_Only", "Shared_Sram"]),
    ("u65", "Ethos_U65_Embedded", ["Sram_Only", "Shared_Sram"]),
    ("u65", "Ethos_U65_High_End", list(INI.memory_modes)),
    ("u85", "Ethos_U85_SYS_Flash_High", ["Sram_Only", "Shared_Sram"]),
    ("u85", "Ethos_U85_SYS_DRAM_Mid", list(INI.memory_modes)),
])
def test_memory_modes_for(family, system, allowed):
    assert memory_modes_for(INI, family, system) == allowed


def test_u55_read_only_port_rule_applies_even_with_dram():
    # A U55 system whose second port is DRAM: Vela's port checks pass, the AXI1 rule does not.
    assert memory_mode_problem(INI, "u65", "Ethos_U65_High_End", "Dedicated_Sram") is None
    assert memory_mode_problem(INI, "u55", "Ethos_U65_High_End", "Dedicated_Sram") == (
        "Dedicated_Sram puts the arena on Axi1, which is read-only on Ethos-U55")


def test_constants_must_not_sit_in_sram_beside_a_separate_arena(tmp_path):
    (tmp_path / "x.ini").write_text(
        "[System_Config.S]\naxi0_port=Sram\naxi1_port=Sram\n"
        "[Memory_Mode.M]\nconst_mem_area=Axi1\narena_mem_area=Axi0\ncache_mem_area=Axi0\n"
        "[Memory_Mode.P]\nconst_mem_area=Axi2\n")
    ini = read_vela_ini(tmp_path / "x.ini")
    assert memory_mode_problem(ini, "u85", "S", "M") == (
        "M puts constants in Sram of S; Vela needs Dram or flash")
    assert memory_mode_problem(ini, "u85", "S", "P") == "const_mem_area=Axi2 is not Axi0 or Axi1"


def test_reading_is_cached_until_the_file_changes(tmp_path):
    path = tmp_path / "v.ini"
    path.write_text("[Memory_Mode.A]\n")
    first = read_vela_ini(path)
    assert read_vela_ini(path) is first
    path.write_text("[Memory_Mode.A]\n[Memory_Mode.Bb]\n")
    assert list(read_vela_ini(path).memory_modes) == ["A", "Bb"]


def test_unreadable_file(tmp_path):
    with pytest.raises(ValueError, match=r"^cannot read it \(No such file or directory\)$"):
        read_vela_ini(tmp_path / "missing.ini")


@pytest.mark.needs_vela
def test_matches_vela():
    """Vela accepts exactly the combinations we accept, apart from the U55 read-only port rule
    (which Vela does not know, and which the shipped ini never needs: U55 configs have no DRAM)."""
    import contextlib
    import io

    from ethosu.vela.architecture_features import ArchitectureFeatures
    from ethosu.vela.errors import VelaError

    for accelerator in ("ethos-u55-128", "ethos-u65-256", "ethos-u85-256"):
        family = accelerator.split("-")[1]
        for system in INI.system_configs:
            for mode in INI.memory_modes:
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        ArchitectureFeatures(
                            vela_config_files=[str(INI.path)], accelerator_config=accelerator,
                            system_config=system, memory_mode=mode, max_blockdep=3,
                            verbose_config=False, arena_cache_size=None)
                    vela_accepts = True
                except VelaError:
                    vela_accepts = False
                ours = memory_mode_problem(INI, family, system, mode)
                if ours is not None and "read-only" in ours and vela_accepts:
                    assert family_of(system) != family, (system, mode)
                    continue
                assert vela_accepts == (ours is None), (accelerator, system, mode, ours)
