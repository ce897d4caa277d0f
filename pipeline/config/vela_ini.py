"""Read Vela's configuration file (vela.ini) with configparser, never importing ethosu.vela.

The allowed system configs and memory modes come from the file, and the checks below repeat
the ones Vela makes when it reads a memory mode (``ArchitectureFeatures._get_vela_config`` in
ethos-u-vela 5.2), so a bad combination fails here, with a line number, instead of in Vela.
"""

from __future__ import annotations

import configparser
import functools
import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_SYSTEM = "System_Config."
_MEMORY = "Memory_Mode."
_FAMILY = re.compile(r"^Ethos_U(\d\d)_")
# Vela's defaults when a section leaves a key out (MemArea(1) and MemPort(1)).
_DEFAULT_AREA = "Sram"
_DEFAULT_PORT = "Axi0"
_PORTS = ("Axi0", "Axi1")
# Ethos-U55's second AXI port (M1) is read-only, so nothing the NPU writes (arena, cache)
# may live behind it; this is why U55 has no Dedicated_Sram mode. The port table is not in
# vela.ini, so this one hardware fact is encoded here.
_READ_ONLY_PORTS = {"u55": ("Axi1",)}


@dataclass(frozen=True)
class VelaIni:
    """The sections of one vela.ini, with ``inherit`` resolved and keys lower-cased.

    Attributes:
        path: absolute path of the file.
        system_configs: ``[System_Config.<name>]`` sections by name.
        memory_modes: ``[Memory_Mode.<name>]`` sections by name.
    """

    path: Path
    system_configs: Mapping[str, Mapping[str, str]]
    memory_modes: Mapping[str, Mapping[str, str]]


def default_vela_ini() -> Path | None:
    """The vela.ini installed with ethos-u-vela, or None when the package is missing.

    Found through the ``ethosu`` namespace package's location, so ethosu.vela (which pulls
    in numpy and the regor extension) is not imported.
    """
    spec = importlib.util.find_spec("ethosu")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        ini = Path(root) / "config_files" / "Arm" / "vela.ini"
        if ini.is_file():
            return ini
    return None


def read_vela_ini(path: Path) -> VelaIni:
    """Parse ``path`` (cached while the file is unchanged).

    Raises:
        ValueError: the file is not readable or not a valid Vela configuration.
    """
    try:
        stat = path.stat()
    except OSError as exc:
        raise ValueError(f"cannot read it ({exc.strerror})") from None
    return _read(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _read(path: Path, _mtime: int, _size: int) -> VelaIni:
    parser = configparser.ConfigParser()
    try:
        parser.read_string(path.read_text(), source=str(path))
        systems = {s[len(_SYSTEM):]: _resolved(parser, s) for s in parser.sections()
                   if s.startswith(_SYSTEM)}
        memories = {s[len(_MEMORY):]: _resolved(parser, s) for s in parser.sections()
                    if s.startswith(_MEMORY)}
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        reason = " ".join(str(exc).split())
        raise ValueError(f"it is not a valid Vela configuration ({reason})") from None
    return VelaIni(path, systems, memories)


def _resolved(parser: configparser.ConfigParser, section: str, seen: tuple = ()) -> dict:
    # Like Vela: keys of the section override those of the section it inherits from.
    if section in seen:
        raise configparser.Error(f"[{section}] inherits from itself")
    if not parser.has_section(section):
        raise configparser.Error(f"[{seen[-1]}] inherits from missing [{section}]")
    keys = dict(parser.items(section, raw=True))
    parent = keys.pop("inherit", None)
    if parent is None:
        return keys
    return {**_resolved(parser, parent, (*seen, section)), **keys}


def accelerator_family(accelerator: str) -> str:
    """``ethos-u85-256`` -> ``u85``."""
    return accelerator.split("-")[1]


def family_of(system_config: str) -> str | None:
    """The NPU family a system config is for, from its name (``Ethos_U55_...`` -> ``u55``).

    Returns None for names that do not say, which are then allowed for every family.
    """
    match = _FAMILY.match(system_config)
    return f"u{match.group(1)}" if match else None


def system_configs_for(ini: VelaIni, family: str) -> list[str]:
    """System configs in ``ini`` usable with an NPU of ``family``, in file order."""
    return [name for name in ini.system_configs if family_of(name) in (None, family)]


def memory_modes_for(ini: VelaIni, family: str, system_config: str) -> list[str]:
    """Memory modes in ``ini`` that Vela accepts for ``family`` with ``system_config``."""
    return [m for m in ini.memory_modes
            if memory_mode_problem(ini, family, system_config, m) is None]


def memory_mode_problem(ini: VelaIni, family: str, system_config: str,
                        memory_mode: str) -> str | None:
    """Why ``memory_mode`` cannot be used, or None when it can.

    Mirrors Vela's checks: constants must be in Dram or flash (unless everything is in one
    Sram), the arena in Sram or Dram, the cache in Sram; plus the read-only ports above.
    """
    system, mode = ini.system_configs[system_config], ini.memory_modes[memory_mode]
    areas = {"Axi0": system.get("axi0_port", _DEFAULT_AREA),
             "Axi1": system.get("axi1_port", _DEFAULT_AREA)}
    ports = {use: mode.get(f"{use}_mem_area", _DEFAULT_PORT) for use in ("const", "arena", "cache")}
    for use, port in ports.items():
        if port not in _PORTS:
            return f"{use}_mem_area={port} is not Axi0 or Axi1"
    for use in ("arena", "cache"):
        if ports[use] in _READ_ONLY_PORTS.get(family, ()):
            return (f"{memory_mode} puts the {use} on {ports[use]}, which is read-only "
                    f"on Ethos-{family.upper()}")
    arena, cache = areas[ports["arena"]], areas[ports["cache"]]
    if arena not in ("Sram", "Dram"):
        return (f"{memory_mode} puts the arena in {arena} of {system_config}; "
                "Vela needs Sram or Dram")
    if cache != "Sram":
        return f"{memory_mode} puts the cache in {cache} of {system_config}; Vela needs Sram"
    const = areas[ports["const"]]
    all_in_one = ports["const"] == ports["arena"] == ports["cache"]
    if not (const in ("Dram", "OnChipFlash", "OffChipFlash") or (const == "Sram" and all_in_one)):
        return (f"{memory_mode} puts constants in {const} of {system_config}; "
                "Vela needs Dram or flash")
    return None
