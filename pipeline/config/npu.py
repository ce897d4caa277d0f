"""The ``npu:`` block of a target: Ethos-U configuration and the Vela options that shape output."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import Field

from pipeline.config.base import Broken, RuledModel, broken, show
from pipeline.config.paths import DriverStackDir, VelaIniFile
from pipeline.config.vela_ini import (
    accelerator_family,
    default_vela_ini,
    family_of,
    memory_mode_problem,
    memory_modes_for,
    read_vela_ini,
    system_configs_for,
)

Accelerator = Literal[
    "ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256",
    "ethos-u65-256", "ethos-u65-512",
    "ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048",
]
# Per family, the system config and memory mode used when the target states none (the
# same pairs ExecuTorch's Ethos-U compile specs use).
FAMILY_DEFAULTS = {
    "u55": ("Ethos_U55_High_End_Embedded", "Shared_Sram"),
    "u65": ("Ethos_U65_High_End", "Dedicated_Sram_384KB"),
    "u85": ("Ethos_U85_SYS_DRAM_Mid", "Sram_Only"),
}
# The NPU-specific variants of a lowered INT graph (``pipeline/tosa/passes`` NPU_VARIANTS):
# Ethos-U65 shares the U55's operator support and compiles the U55 variant.
NPU_VARIANTS = ("u55", "u85")
VARIANT_OF = {"u55": "u55", "u65": "u55", "u85": "u85"}
# Vela's maximum address offset: 32-bit AXI on U55, 40-bit on U65/U85.
_ADDRESS_BITS = {"u55": 32, "u65": 40, "u85": 40}
# Vela's --cpu-tensor-alignment range (ethos-u-vela 5.2): vela.py refuses values under 16 or
# not a power of two; its C++ core reads the value as a signed 32-bit int, so 2**31 becomes 0
# and fails there ("CPU tensor alignment (0) must be a multiple of 16").
ALIGNMENT_RANGE = (16, 2**30)
# The values of each Vela option the search tries (docs/search.md says why these options and
# no others: each changes only the schedule and the memory layout, never an operation).
SEARCH_OPTIMISE = ("Performance", "Size")
SEARCH_ALLOCATORS = ("HillClimb", "Greedy", "LinearAlloc")
# The Linux drivers a Cortex-A target can drive its NPU through (docs/runtime.md): the mainline
# DRM accel ``ethosu`` driver (/dev/accel/accelN) or Arm's Ethos-U Linux driver stack (its
# user-space library over the ``ethosu`` kernel driver in direct mode, /dev/ethosu0).
LINUX_DRIVERS = ("accel", "ethosu-driver-stack")
# The tag of ethos-u-linux-driver-stack the runtime build fetches without ``driver_stack``.
DRIVER_STACK_TAG = "26.05"  # also ETHOSU_RT_DRIVER_STACK_TAG in cmake/EthosuDriverStack.cmake
# Fields that choose how the runtime reaches the NPU, not what Vela emits: they are not part
# of the vela stage's options (u85-linux and u85-linux-driver-stack share one Vela run).
RUNTIME_FIELDS = frozenset({"driver", "driver_stack"})


class NpuConfig(RuledModel):
    """An Ethos-U NPU and the Vela options that change what Vela emits.

    ``system_config`` and ``memory_mode`` must be sections of ``config_file`` suited to the
    accelerator. ``cop_format``/``separate_io_regions`` default from the target's CPU
    (Cortex-M: COP1 and shared IO; Cortex-A direct drive: COP2 and separate IO regions);
    ``TargetConfig`` enforces those pairs, which also keeps Vela's own rule (separate IO
    regions need COP2) from being broken.

    Attributes:
        config: the accelerator, e.g. ``ethos-u85-256``.
        config_file: absolute path of the Vela .ini (default: the one ethos-u-vela installs).
        system_config: a ``[System_Config.<name>]`` of ``config_file``.
        memory_mode: a ``[Memory_Mode.<name>]`` of ``config_file``.
        optimise: Vela ``--optimise``.
        arena_cache_size: Vela ``--arena-cache-size`` in bytes, or None for the ini's value.
        cop_format: driver payload container: ``COP1`` (Cortex-M, the default there) or
            ``COP2`` (Cortex-A, the default there).
        separate_io_regions: inputs/outputs in regions of their own (needs COP2); true on
            Cortex-A, false on Cortex-M.
        tensor_allocator: Vela ``--tensor-allocator``.
        cpu_tensor_alignment: Vela ``--cpu-tensor-alignment``: a power of two from 16 to 2**30.
        fallback: ``cpu`` runs the operators the NPU cannot take on the target's CPU (the
            graph is split into NPU and CPU segments, ``ethosu/mixed.py``); None (the
            default) fails the build naming each such operator.
        search: how many Vela option sets the vela stage compiles, keeping the one with the
            fewest cycles (docs/search.md): ``off`` compiles once with the options above,
            ``quick`` (the default) also tries the other ``optimise``, ``full`` every
            ``optimise`` x ``tensor_allocator`` pair, with progress output. An option the
            target sets is never varied.
        driver: the Linux driver of a Cortex-A target (null on Cortex-M): ``accel`` (the
            default there: the mainline DRM accel ``ethosu`` driver) or
            ``ethosu-driver-stack`` (Arm's Ethos-U Linux driver stack in direct mode: an
            Ethos-U85 only, with COP2 and separate IO regions, the Cortex-A defaults).
        driver_stack: folder of an ethos-u-linux-driver-stack checkout the runtime is built
            against (``driver: ethosu-driver-stack`` only); None fetches tag 26.05 at
            configure time, which needs the network.
    """

    config: Accelerator
    config_file: VelaIniFile = Field(default=None)
    system_config: str = Field(default=None)
    memory_mode: str = Field(default=None)
    optimise: Literal["Performance", "Size"] = "Performance"
    arena_cache_size: Annotated[int, Field(ge=0)] | None = None
    cop_format: Literal["COP1", "COP2"] = "COP1"
    separate_io_regions: bool = False
    tensor_allocator: Literal["LinearAlloc", "Greedy", "HillClimb"] = "HillClimb"
    cpu_tensor_alignment: int = 16
    fallback: Literal["cpu"] | None = None
    search: Literal["off", "quick", "full"] = "quick"
    driver: Literal["accel", "ethosu-driver-stack"] | None = None
    driver_stack: DriverStackDir | None = None

    @property
    def family(self) -> str:
        """``u55``, ``u65`` or ``u85``."""
        return accelerator_family(self.config)

    @property
    def variant(self) -> str:
        """Which of ``NPU_VARIANTS`` of the lowered graph Vela compiles for this NPU."""
        return VARIANT_OF[self.family]

    @property
    def macs(self) -> int:
        """MACs per cycle, e.g. 256 for ``ethos-u85-256``."""
        return int(self.config.rsplit("-", 1)[1])

    def vela_args(self) -> list[str]:
        """Vela's argv options for this NPU, every option explicit (no Vela defaults).

        Returns:
            e.g. ``['--accelerator-config', 'ethos-u85-256', '--config', '/…/vela.ini',
            '--system-config', 'Ethos_U85_SYS_DRAM_Mid', '--memory-mode', 'Sram_Only', …]``;
            input, output format and output folder are the Vela stage's to add.
        """
        args = [
            "--accelerator-config", self.config,
            "--config", str(self.config_file),
            "--system-config", self.system_config,
            "--memory-mode", self.memory_mode,
            "--optimise", self.optimise,
            "--tensor-allocator", self.tensor_allocator,
            "--cpu-tensor-alignment", str(self.cpu_tensor_alignment),
            "--cop-format", self.cop_format,
        ]
        if self.arena_cache_size is not None:
            args += ["--arena-cache-size", str(self.arena_cache_size)]
        if self.separate_io_regions:
            args.append("--separate-io-regions")
        return args

    def searched(self) -> dict[str, tuple[str, ...]]:
        """The Vela options the search varies, field -> the values tried (the target's own
        first); empty with ``search: off``. A field the target sets is never varied."""
        varied = {"optimise": SEARCH_OPTIMISE}
        if self.search == "full":
            varied["tensor_allocator"] = SEARCH_ALLOCATORS
        if self.search == "off":
            return {}
        return {name: (getattr(self, name), *(v for v in values if v != getattr(self, name)))
                for name, values in varied.items() if name not in self.model_fields_set}

    def vela_candidates(self) -> list[list[str]]:
        """Vela's argv options for each option set the search compiles, the target's own
        (``vela_args()``) first."""
        varied = self.searched()
        sets = [dict(zip(varied, values)) for values in itertools.product(*varied.values())]
        return [self.model_copy(update=change).vela_args() for change in sets] or [self.vela_args()]

    @classmethod
    def _fill_defaults(cls, data, context):
        if data.get("search") is False:  # YAML 1.1 reads a bare ``off`` as false
            data["search"] = "off"
        if "config_file" not in data and (ini := default_vela_ini()) is not None:
            data["config_file"] = str(ini)
        family = FAMILY_DEFAULTS.get(_family_or_none(data.get("config")))
        if family:
            data.setdefault("system_config", family[0])
            data.setdefault("memory_mode", family[1])
        return data

    @classmethod
    def _rules(cls, v, context) -> Iterator[Broken]:
        alignment, (low, high) = v.get("cpu_tensor_alignment"), ALIGNMENT_RANGE
        if alignment is not None and not (low <= alignment <= high and alignment.bit_count() == 1):
            yield broken(f"must be a power of two from {low} to {high} (2**30, the most Vela "
                         f"takes); got {show(alignment)}", "cpu_tensor_alignment")
        if v.get("driver_stack") is not None and v.get("driver") != "ethosu-driver-stack":
            yield broken(f"must be null unless driver is ethosu-driver-stack (the checkout is "
                         f"what that driver's runtime is built against); got "
                         f"{show(str(v['driver_stack']))} with driver {show(v.get('driver'))}",
                         "driver_stack", "driver")
        if "config" not in v:
            return
        family = accelerator_family(v["config"])
        limit = 1 << _ADDRESS_BITS[family]
        if (v.get("arena_cache_size") or 0) > limit:
            yield broken(f"must be <= {limit} for {v['config']}; got {v['arena_cache_size']}",
                         "arena_cache_size")
        if v.get("config_file") is None:
            if "config_file" in v:
                yield broken("must be given: ethos-u-vela is not installed, so there is no "
                             "default vela.ini; got nothing", "config_file")
            return
        yield from _ini_rules(v, family)


def _family_or_none(config) -> str | None:
    if isinstance(config, str) and config.startswith("ethos-u") and config.count("-") == 2:
        return accelerator_family(config)
    return None


def _ini_rules(v, family: str) -> Iterator[Broken]:
    ini, config = read_vela_ini(v["config_file"]), v["config"]
    system, mode = v.get("system_config"), v.get("memory_mode")
    systems = system_configs_for(ini, family)
    if system is not None and system not in systems:
        if system in ini.system_configs:
            why = f"it is an Ethos-{family_of(system).upper()} system config"
        else:
            why = f"no [System_Config.{system}] in {ini.path.name}"
        yield broken(f"must be one of {', '.join(systems)} for {config}; got {show(system)} "
                     f"({why})", "system_config", "config_file", "config")
        return
    if system is None or mode is None:
        return
    modes = memory_modes_for(ini, family, system)
    if mode not in ini.memory_modes:
        why = f"no [Memory_Mode.{mode}] in {ini.path.name}"
    else:
        why = memory_mode_problem(ini, family, system, mode)
    if why:
        yield broken(f"must be one of {', '.join(modes)} for {config} with {system}; "
                     f"got {show(mode)} ({why})", "memory_mode", "system_config", "config_file",
                     "config")

