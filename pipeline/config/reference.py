"""The generated parts of the targets reference (``docs/targets.md``): every field of
targets.yaml with what it allows and its default, read from the same JSON Schema that
``targets.schema.json`` is written from, plus the CPU, NPU and board tables of this package.

So the reference cannot drift from the code: ``python -m pipeline.graph.docs`` rewrites the
blocks, and ``tests/graph/test_docs.py`` fails when a committed block differs.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from typing import Any

from pipeline.config.boards import BOARDS
from pipeline.config.cpus import CPUS
from pipeline.config.json_schema import targets_schema
from pipeline.config.models import Calibration, InputSpec, ModelConfig
from pipeline.config.npu import FAMILY_DEFAULTS, NpuConfig
from pipeline.config.schema import (
    KIND_PAYLOAD,
    KIND_PLATFORM,
    KIND_TOOLCHAINS,
    NPU_DRIVERS,
    TargetConfig,
)
from pipeline.config.vgf import VgfConfig

WIDTH = 100
# The heading each schema definition is documented under in docs/targets.md (its anchor).
SECTIONS = {"ModelConfig": "models", "InputSpec": "inputs", "Calibration": "calibration",
            "Target": "targets", "NpuConfig": "npu", "VgfConfig": "vgf"}
# The pydantic model behind each definition: what is required, and defaults from factories.
_MODELS = {"ModelConfig": ModelConfig, "InputSpec": InputSpec, "Calibration": Calibration,
           "Target": TargetConfig, "NpuConfig": NpuConfig, "VgfConfig": VgfConfig}
_KINDS = {"cortex-m": "Cortex-M", "cortex-a": "Cortex-A", "host": "host"}
# Defaults that depend on other fields (the schema states none for them).
_DERIVED = {
    ("Target", "isa"): "the CPU's highest level (see CPUs below); `null` off Cortex-M",
    ("Target", "platform"): "from the CPU: " + ", ".join(
        f"`{p}` ({_KINDS[k]})" for k, p in KIND_PLATFORM.items()),
    ("Target", "toolchain"): "from the CPU: " + ", ".join(
        f"`{t[0]}` ({_KINDS[k]})" for k, t in KIND_TOOLCHAINS.items()),
    ("Target", "quantization"): "`int8` for the INT profile, `none` for FP",
    ("Target", "npu"): "none: required (`null` for no NPU; `null` by default with `vgf`)",
    ("Calibration", "samples"): "`16` (`null` when `folder` is set)",
    ("Calibration", "seed"): "`1` (`null` when `folder` is set)",
    ("NpuConfig", "config_file"): "the `vela.ini` installed with ethos-u-vela",
    ("NpuConfig", "system_config"): "per NPU family (see NPU families below)",
    ("NpuConfig", "memory_mode"): "per NPU family (see NPU families below)",
    ("NpuConfig", "cop_format"): "from the CPU: " + ", ".join(
        f"`{c}` ({_KINDS[k]})" for k, (c, _) in KIND_PAYLOAD.items()),
    ("NpuConfig", "separate_io_regions"): "from the CPU: " + ", ".join(
        f"`{str(s).lower()}` ({_KINDS[k]})" for k, (_, s) in KIND_PAYLOAD.items()),
}


def field_block(definition: str) -> str:
    """One bullet per field of a schema definition (``NpuConfig``): its YAML key, meaning,
    what it allows and its default."""
    node = targets_schema()["$defs"][definition]
    fields = _MODELS[definition].model_fields
    items = []
    for name, prop in node["properties"].items():
        description = prop.get("description", "")
        text = f"- `{name}`: {description} Allowed: {_allowed(prop, top=True)}."
        if name in fields and "Default:" not in description:
            text += f" Default: {_default(definition, name, fields[name])}."
        items.append(wrap(text))
    return "\n".join(items) + "\n"


def _default(definition: str, name: str, field: Any) -> str:
    if (definition, name) in _DERIVED:
        return _DERIVED[definition, name]
    if field.is_required():
        return "none: required"
    if field.default_factory is not None:
        return _value(field.default_factory())
    return _value(field.default)


def cpu_block() -> str:
    """The CPUs a target may name: kind, architecture, ISA levels, platform and toolchains."""
    rows = ["| `cpu` | kind | architecture | `isa` (default last) | `platform` | `toolchain` |",
            "|---|---|---|---|---|---|"]
    for info in CPUS.values():
        isas = ", ".join(info.isas) if info.isas else "`null`"
        toolchains = ", ".join(KIND_TOOLCHAINS[info.kind])
        rows.append(f"| `{info.name}` | {_KINDS[info.kind]} | {info.arch} | {isas} | "
                    f"{KIND_PLATFORM[info.kind]} | {toolchains} |")
    return "\n".join(rows) + "\n"


def npu_block() -> str:
    """Per Ethos-U family: its accelerators, default system config and memory mode, and the
    CPUs that may drive it."""
    accelerators = NpuConfig.model_fields["config"].annotation.__args__
    rows = ["| family | `config` | default `system_config` | default `memory_mode` | driven from |",
            "|---|---|---|---|---|"]
    for family, (system, memory) in FAMILY_DEFAULTS.items():
        names = [a for a in accelerators if a.split("-")[1] == family]
        sizes = ", ".join(a.rsplit("-", 1)[1] for a in names)
        drivers = " or ".join(_KINDS[k] for k in NPU_DRIVERS[family])
        rows.append(f"| Ethos-{family.upper()} | `ethos-{family}-` {sizes} | `{system}` | "
                    f"`{memory}` | {drivers} |")
    return "\n".join(rows) + "\n"


def board_block() -> str:
    """Where a CPU-only target's artifact runs when the build checks it, and why a CPU runs
    on a substitute."""
    rows = ["| `cpu` | firmware linked for | QEMU | emulated CPU |", "|---|---|---|---|"]
    notes: list[str] = []
    for cpu, board in BOARDS.items():
        linked = board.board.replace("_", " ").upper() if board.board else "Linux (static)"
        qemu = f"`qemu-system-arm -M {board.qemu}`" if board.board else \
            f"`qemu-aarch64 -cpu {board.qemu_cpu}`"
        mark = ""
        if board.substitute:
            if board.substitute not in notes:
                notes.append(board.substitute)
            mark = f" ({notes.index(board.substitute) + 1})"
        rows.append(f"| `{cpu}` | {linked} | {qemu} | {board.qemu_cpu}{mark} |")
    lines = [wrap(f"{i}. {note}.", indent="   ") for i, note in enumerate(notes, 1)]
    return "\n".join(rows) + "\n\n" + "\n".join(lines) + "\n"


BLOCKS: dict[str, Callable[[], str]] = {
    **{f"targets:{section}": (lambda d=definition: field_block(d))
       for definition, section in SECTIONS.items()},
    "targets:cpus": cpu_block,
    "targets:npu-families": npu_block,
    "cpu:boards": board_block,
}


def _allowed(prop: dict[str, Any], top: bool = False) -> str:
    """What a JSON Schema node accepts, in words (``top``: a field's own node, whose
    description is the field's, not a note on one alternative)."""
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[1]
        return f"a block ([{SECTIONS[name]}](#{SECTIONS[name]}))"
    for key in ("anyOf", "oneOf"):
        if key in prop:
            return ", or ".join(_allowed(p) for p in prop[key])
    if "enum" in prop:
        return "one of " + ", ".join(f"`{v}`" for v in prop["enum"])
    if "const" in prop:
        return f"`{prop['const']}`"
    kind = prop.get("type")
    if kind in ("null", "boolean", "integer", "number", "array"):
        return {"null": "`null`", "boolean": "`true` or `false`"}.get(kind) or \
            (_array(prop) if kind == "array" else _number(prop))
    if "examples" in prop:
        return "a spec such as " + ", ".join(f"`{v}`" for v in prop["examples"])
    if r"\.py:" in prop.get("pattern", ""):
        return "`file.py:Name`" + ("" if top else f" ({prop.get('description', '')})")
    if "pattern" in prop:
        return "a name" if prop["pattern"].startswith("^[A-Za-z0-9]") else \
            f"a string matching `{prop['pattern']}`"
    if not top and "description" in prop:
        return f"a string ({prop['description']})"
    return "a string"


def _number(prop: dict[str, Any]) -> str:
    word = "an integer" if prop["type"] == "integer" else "a number"
    low = prop.get("minimum", prop.get("exclusiveMinimum"))
    if "exclusiveMinimum" in prop:
        low = low + 1 if prop["type"] == "integer" else low
    high = prop.get("maximum")
    if "exclusiveMaximum" in prop:
        high = f"2**{prop['exclusiveMaximum'].bit_length() - 1} - 1" if \
            prop["exclusiveMaximum"] & (prop["exclusiveMaximum"] - 1) == 0 else \
            prop["exclusiveMaximum"] - 1
    if low is not None and high is not None:
        return f"{word} from {low} to {high}"
    return f"{word} >= {low}" if low is not None else word


def _array(prop: dict[str, Any]) -> str:
    if "prefixItems" in prop:
        return "`[lo, hi]`, two numbers"
    low, high = prop.get("minItems"), prop.get("maxItems")
    count = f"{low} to {high} " if low and high else "one or more " if low == 1 else ""
    return f"a list of {count}{_plural(_allowed(prop.get('items', {})))}"


def _plural(allowed: str) -> str:
    for single, plural in (("an integer >= 1", "positive integers"), ("a string", "strings"),
                           ("a block", "blocks")):
        if allowed.startswith(single):
            return plural + allowed[len(single):]
    return allowed


def _value(value: Any) -> str:
    """A default as YAML would spell it: ``mse``, ``false``, ``[-1.0, 1.0]``, ``{samples: 16}``."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(exclude_defaults=True)
    if isinstance(value, dict):
        return "`{" + ", ".join(f"{k}: {_value(v)[1:-1]}" for k, v in value.items()) + "}`"
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    if isinstance(value, tuple):
        value = list(value)
    return f"`{json.dumps(value)}`"


def wrap(text: str, indent: str = "  ") -> str:
    return textwrap.fill(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False,
                         break_long_words=False)
