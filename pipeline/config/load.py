"""Load targets.yaml: read it with line numbers, resolve ``defaults``/``extends``, validate.

Resolution order for one target: ``defaults:``, then the root of its ``extends:`` chain down
to its parent, then its own block. Mappings (``npu:``) merge key by key; any other value,
including ``null`` and lists, replaces what came before.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pipeline.config.base import Loc, show, unknown
from pipeline.config.issues import Issues
from pipeline.config.schema import ProjectConfig
from pipeline.config.yaml_lines import YamlSyntaxError, parse_yaml
from pipeline.errors import ConfigError

TOP_LEVEL = ("defaults", "models", "targets")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
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
    try:
        text = absolute.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([f"{display}: must be an existing file; got nothing at {absolute}"])
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"{display}: must be a readable UTF-8 file; got {exc}"]) from None
    try:
        doc = parse_yaml(text)
    except YamlSyntaxError as exc:
        raise ConfigError([f"{display}:{exc.line}: {exc.message}"]) from None
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
            if not _NAME.match(name):
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
    for name, body in targets.items():
        root = ("targets", name)
        chain = _chain(name, targets, issues) if isinstance(body, dict) else [name]
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
        issues.origins.update(origins)
        resolved[name] = merged
    return resolved


def _chain(name: str, targets: dict, issues: Issues) -> list[str] | None:
    """``[name, parent, grandparent, ...]``, or None (with a problem recorded) if broken."""
    chain = [name]
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
        if parent in chain:
            _report_cycle(chain[chain.index(parent):], list(targets), issues)
            return None
        if not isinstance(targets[parent], dict):
            return None  # the parent's own problem is reported when it is validated
        chain.append(parent)


def _report_cycle(members: list[str], order: list[str], issues: Issues) -> None:
    # Start the cycle at the member written first, so every target in it reports one line.
    start = min(range(len(members)), key=lambda i: order.index(members[i]))
    cycle = members[start:] + members[:start]
    issues.add_at(("targets", cycle[0], "extends"),
                  f"must not form a cycle; got {' -> '.join([*cycle, cycle[0]])}")


def _overlay(dst: dict, src: dict, src_path: Loc, dst_path: Loc, origins: dict[Loc, Loc]):
    for key, value in src.items():
        source, dest = (*src_path, key), (*dst_path, key)
        if isinstance(value, dict) and isinstance(dst.get(key), dict):
            origins[dest] = source
            _overlay(dst[key], value, source, dest, origins)
            continue
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
