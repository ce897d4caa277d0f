"""Load targets.yaml: read it with line numbers, resolve ``defaults``/``extends``, validate.

Resolution order for one target: ``defaults:``, then the root of its ``extends:`` chain down
to its parent, then its own block. Mappings (``npu:``) merge key by key; any other value,
including ``null`` and lists, replaces what came before. A chain holds at most
``MAX_EXTENDS`` targets, so resolving every target stays linear in the file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pipeline.config.base import Loc, os_problem, plain, show, unknown
from pipeline.config.issues import Issues, dotted
from pipeline.config.schema import ProjectConfig
from pipeline.config.yaml_lines import YamlSyntaxError, parse_yaml
from pipeline.errors import ConfigError

TOP_LEVEL = ("defaults", "models", "targets")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")  # fullmatch: no final newline slips through
MAX_EXTENDS = 32  # targets in one extends chain, the target itself included
# Values in all targets once defaults and extends are copied in: each costs a few µs to
# resolve and validate, and a short file can multiply a long defaults: by many targets.
MAX_RESOLVED_VALUES = 100_000
MAX_FILE_BYTES = 512 * 1024  # PyYAML reads about 70 KB a second
_BLOCK_SHAPE = {
    "defaults": "a mapping of target fields",
    "models": "a mapping of model names to models",
    "targets": "a mapping of target names to targets",
}
_NAME_RULE = "a name of letters, digits, '-' and '_', starting with a letter or digit"


def load_config(path: Path) -> ProjectConfig:
    """Read, resolve and validate a targets.yaml.

    Args:
        path: the YAML file; messages name it as given (a relative path stays relative).
    Returns:
        The project with every target fully resolved and every default filled in.
    Raises:
        ConfigError: listing every problem found, one ``file:line: field: message`` each.
    """
    display, absolute = str(path), Path(os.path.abspath(path))
    text = _read_text(display, absolute)
    try:
        doc = parse_yaml(text)
    except YamlSyntaxError as exc:
        where = f"{_clip(dotted(exc.where))}: " if exc.where else ""
        raise ConfigError([f"{display}:{exc.line}: {where}{exc.message}"]) from None
    issues = Issues(display, doc)
    for line, where, message in doc.issues:
        issues.add(line, where, message)
    defaults, models, targets = _sections(doc.data, issues)
    data = {"path": absolute, "models": models, "targets": _resolve(defaults, targets, issues)}
    context = {"base_dir": absolute.parent, "model_names": tuple(models)}
    try:
        project = ProjectConfig.model_validate(data, context=context)
    except ValidationError as exc:
        issues.add_validation_errors(exc.errors(), data, ProjectConfig)
    if issues:
        raise ConfigError(issues.lines())
    return project


def _clip(where: str) -> str:
    """A path nested through aliases can be hundreds of parts long: keep its two ends."""
    return where if len(where) <= 120 else f"{where[:60]}…{where[-40:]}"


def _read_text(display: str, absolute: Path) -> str:
    """The file's text; an unreadable file or bytes that are not UTF-8 are a ConfigError."""
    try:
        with absolute.open("rb") as file:
            raw = file.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError([f"{display}: must be an existing file; "
                           f"got nothing at {plain(str(absolute))}"]) from None
    except (OSError, ValueError) as exc:
        raise ConfigError([f"{display}: must be a readable file; "
                           f"got {os_problem(exc, absolute)}"]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError([f"{display}: must be at most {MAX_FILE_BYTES} bytes; got more"])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        column = len(raw[line_start:exc.start].decode("utf-8", "replace")) + 1
        raise ConfigError([f"{display}:{line}: must be UTF-8 text; got byte "
                           f"0x{raw[exc.start]:02x} at column {column} ({exc.reason})"]) from None


def _sections(data: Any, issues: Issues) -> tuple[dict, dict, dict]:
    """The top-level blocks, each a dict (empty when missing or wrong)."""
    if not isinstance(data, dict):
        got = "an empty file" if data is None else show(data)
        issues.add(1, (), f"must be a mapping with keys models and targets; got {got}")
        return {}, {}, {}
    for key in data:
        if key not in TOP_LEVEL:
            issues.add_at((key,), unknown("field", key, TOP_LEVEL), key=True)
    blocks = [_block(data, key, issues) for key in TOP_LEVEL]
    defaults, models, targets = blocks
    if "extends" in defaults:
        issues.add_at(("defaults", "extends"), "must be written in a target, not in defaults "
                      "(defaults apply to every target); got "
                      f"{show(defaults.pop('extends'))}", key=True)
    for key, block in (("models", models), ("targets", targets)):
        if data.get(key) == {}:
            issues.add_at((key,), f"must define at least one {key[:-1]}; got none", key=True)
        for name in block:
            if not _NAME.fullmatch(name):
                issues.add_at((key, name), f"must be {_NAME_RULE}; got {show(name)}", key=True)
    return defaults, models, targets


def _block(data: dict, key: str, issues: Issues) -> dict:
    """``data[key]`` as a (copied) dict; a missing or wrong block is reported and empty."""
    if key not in data:
        if key != "defaults":
            issues.add(1, (key,), "must be set; got nothing")
        return {}
    value = data[key]
    if isinstance(value, dict):
        return dict(value)
    if value is not None or key != "defaults":
        issues.add_at((key,), f"must be {_BLOCK_SHAPE[key]}; got {show(value)}")
    return {}


def _resolve(defaults: dict, targets: dict, issues: Issues) -> dict[str, Any]:
    """Each target merged from defaults and its extends chain; broken chains are left out."""
    resolved: dict[str, Any] = {}
    too_long: list[str] = []
    values = 0
    for name, body in targets.items():
        root = ("targets", name)
        chain = _chain(name, targets, issues, too_long) if isinstance(body, dict) else [name]
        if chain is None:
            continue
        if not isinstance(body, dict):
            issues.origins[root] = root
            resolved[name] = body
            continue
        merged: dict[str, Any] = {}
        origins: dict[Loc, Loc] = {root: root}
        _overlay(merged, defaults, ("defaults",), root, origins)
        for ancestor in reversed(chain):
            own = {k: v for k, v in targets[ancestor].items() if k != "extends"}
            _overlay(merged, own, ("targets", ancestor), root, origins)
        values += len(origins)  # one entry per value
        if values > MAX_RESOLVED_VALUES:
            issues.add_at(root, f"targets must resolve to at most {MAX_RESOLVED_VALUES} values "
                          f"in all (defaults: and extends: are copied into each); got {values} "
                          "with this one", key=True)
            break
        issues.origins.update(origins)
        resolved[name] = merged
    _report_too_long(too_long, targets, issues)
    return resolved


def _chain(name: str, targets: dict, issues: Issues, too_long: list[str]) -> list[str] | None:
    """``[name, parent, grandparent, ...]``, or None (with a problem recorded, or ``name``
    added to ``too_long``) if broken. A loop, not recursion: chains may be long."""
    chain, seen = [name], {name}
    while True:
        current = chain[-1]
        parent = targets[current].get("extends")
        if parent is None:
            return chain
        where = ("targets", current, "extends")
        if not isinstance(parent, str):
            issues.add_at(where, f"must be the name of another target; got {show(parent)}")
            return None
        if parent not in targets:
            others = [t for t in targets if t != current]
            issues.add_at(where, unknown("target", parent, others, named=True))
            return None
        if parent in seen:
            _report_cycle(chain[chain.index(parent):], targets, issues)
            return None
        if not isinstance(targets[parent], dict):
            return None  # the parent's own problem is reported when it is validated
        if len(chain) == MAX_EXTENDS:
            too_long.append(name)
            return None
        chain.append(parent)
        seen.add(parent)


def _report_too_long(too_long: list[str], targets: dict, issues: Issues) -> None:
    # Every target above the cap in one chain is too long; the chain is reported once, at
    # the target no other too-long one extends (any one of them, should the chain loop).
    bases = {targets[name]["extends"] for name in too_long}
    for name in [n for n in too_long if n not in bases] or too_long[:1]:
        chain = [name]
        while len(chain) <= MAX_EXTENDS:
            chain.append(targets[chain[-1]]["extends"])
        shown = " -> ".join(map(plain, [*chain[:3], "…", *chain[-2:]]))
        issues.add_at(("targets", name, "extends"), f"must lead through at most {MAX_EXTENDS} "
                      f"targets (an extends chain); got {shown} -> …")


def _report_cycle(members: list[str], targets: dict, issues: Issues) -> None:
    # Start the cycle at the member written first, so every target in it reports one line.
    in_cycle = set(members)
    first = members.index(next(name for name in targets if name in in_cycle))
    cycle = members[first:] + members[:first]
    issues.add_at(("targets", cycle[0], "extends"),
                  f"must not form a cycle; got {' -> '.join(map(plain, [*cycle, cycle[0]]))}")


def _overlay(dst: dict, src: dict, src_path: Loc, dst_path: Loc, origins: dict[Loc, Loc]):
    for key, value in src.items():
        source, dest = (*src_path, key), (*dst_path, key)
        if isinstance(value, dict) and isinstance(dst.get(key), dict):
            origins[dest] = source
            _overlay(dst[key], value, source, dest, origins)
            continue
        if key in dst:  # a value written before is replaced: forget where its parts came from
            for stale in [loc for loc in origins if loc[: len(dest)] == dest]:
                del origins[stale]
        dst[key] = _copy(value, source, dest, origins)


def _copy(value: Any, source: Loc, dest: Loc, origins: dict[Loc, Loc]) -> Any:
    origins[dest] = source
    if isinstance(value, dict):
        return {k: _copy(v, (*source, k), (*dest, k), origins) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v, (*source, i), (*dest, i), origins) for i, v in enumerate(value)]
    return value
