"""Turn pydantic errors into ``file:line: field: must be <allowed>; got <value>`` lines.

Error locations (``loc`` tuples) are locations in the data that was validated. A target's
data is merged from ``defaults:``, its ``extends:`` chain and its own block, so ``origins``
maps each merged location back to the YAML path where the value was written; the YAML
reader's line table then gives the line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

from pipeline.config.base import RULE_ERROR, Loc, plain, show, unknown
from pipeline.config.yaml_lines import YamlDoc


@dataclass
class Issues:
    """Collects problems and prints them as ``file:line: where: message``, sorted by line.

    Identical problems (one bad value in ``defaults:`` seen by several targets) are printed
    once, with the targets listed.
    """

    display_name: str
    doc: YamlDoc
    origins: dict[Loc, Loc] = field(default_factory=dict)
    _found: dict[tuple[int, str, str, bool], list[str]] = field(default_factory=dict)

    def add(self, line: int, path: Loc, message: str, target: str | None = None,
            default: bool = False) -> None:
        """Record one problem at ``line`` about YAML ``path``.

        Args:
            target: the target whose resolved values showed the problem.
            default: ``path`` holds a default the user did not write (``line`` then points
                at the value that made the default wrong).
        """
        targets = self._found.setdefault((line, dotted(path), message, default), [])
        if target and target not in targets:
            targets.append(target)

    def add_at(self, path: Loc, message: str, *, key: bool = False) -> None:
        """Record a problem about YAML ``path``, at its key line (``key``) or value line."""
        self.add(self.line_of(path, key=key), path, message)

    def lines(self) -> list[str]:
        """The formatted problems, by line number."""
        out = []
        for (line, where, message, default), targets in sorted(self._found.items()):
            owner = where.split(".")[1] if where.startswith("targets.") else None
            notes = ["default"] if default else []
            if targets and [plain(t) for t in targets] != [owner]:
                notes.append("for " + ", ".join(f"targets.{plain(t)}" for t in targets))
            label = where + (f" ({'; '.join(notes)})" if notes else "")
            out.append(f"{self.display_name}:{line}: {label}{': ' if label else ''}{message}")
        return out

    def __bool__(self) -> bool:
        return bool(self._found)

    def line_of(self, path: Loc, *, key: bool = False) -> int:
        """Line of the nearest written part of YAML ``path``."""
        for end in range(len(path), -1, -1):
            if path[:end] in self.doc.lines:
                key_line, value_line = self.doc.lines[path[:end]]
                block = isinstance(_value_at(self.doc.data, path), dict | list)
                return key_line if key or block or end < len(path) else value_line
        return 1

    def written(self, loc: Loc) -> Loc | None:
        """The YAML path where validated location ``loc`` was written, or None."""
        if loc in self.origins:
            return self.origins[loc]
        if loc and loc[0] != "targets" and loc in self.doc.lines:
            return loc
        return None

    def nearest(self, loc: Loc) -> Loc:
        """YAML path of the longest written prefix of ``loc`` plus the rest of ``loc``."""
        for end in range(len(loc), 0, -1):
            origin = self.written(loc[:end])
            if origin is not None:
                return (*origin, *loc[end:])
        return loc

    def add_validation_errors(self, errors: Iterable[dict], data: Any, root: type[BaseModel]):
        """Record every error of a pydantic ``ValidationError.errors()`` list."""
        for error in errors:
            if error["type"] == RULE_ERROR and "locs" in error["ctx"]:
                self._add_rule(error, data)
            else:
                self._add_field_error(error, data, root)

    def _add_field_error(self, error: dict, data: Any, root: type[BaseModel]) -> None:
        loc = _data_loc(error["loc"], data, keep_last=error["type"] == "missing")
        path = self.nearest(loc)
        if error["type"] == "missing":
            self.add(self.line_of(path[:-1], key=True), path,
                     f"must be set{_REQUIRED.get(path[-1], '')}; got nothing", _target_of(loc))
        elif error["type"] == "extra_forbidden":
            allowed = _fields_at(root, loc[:-1])
            self.add_at(path, unknown("field", loc[-1], allowed), key=True)
        else:
            self.add_at(path, message_for(error))

    def _add_rule(self, error: dict, data: Any) -> None:
        locs = error["ctx"]["locs"]
        prefix = _data_loc(error["loc"][: len(error["loc"]) - len(locs[0])], data, False)
        subject = prefix + locs[0]
        cause = next((prefix + loc for loc in locs if self.written(prefix + loc)), None)
        path = self.nearest(subject)
        line = self.line_of(self.nearest(cause) if cause else path)
        self.add(line, path, error["ctx"]["message"], _target_of(subject),
                 default=cause not in (None, subject))


def _value_at(data: Any, path: Loc) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _target_of(loc: Loc) -> str | None:
    return loc[1] if loc[:1] == ("targets",) and len(loc) > 1 else None


def dotted(path: Loc) -> str:
    """``('models', 'add', 'inputs', 0, 'shape')`` -> ``models.add.inputs[0].shape``; a key
    with control characters is quoted and escaped, so a message stays on one line."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{plain(part)}" if out else plain(part))
    return out


_EXPECTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
_SIMPLE = {
    "int_type": "an integer", "float_type": "a number", "string_type": "a string",
    "bool_type": "true or false", "tuple_type": "a list", "list_type": "a list",
    "dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type": "a mapping",
    "none_required": "null", "finite_number": "a finite number",
}
# What a missing required field may be set to, where "must be set" alone would not say.
_REQUIRED = {"npu": " (an npu block, or null for no NPU: the TOSA graph is then verified on "
                    "the host)"}
_BOUND = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
          "less_than_equal": "<="}


def message_for(error: Mapping[str, Any]) -> str:
    """The ``must be <allowed>; got <value>`` text for one pydantic error."""
    kind, ctx, got = error["type"], error.get("ctx") or {}, show(error.get("input"))
    if kind == RULE_ERROR:
        return ctx["message"]
    if kind == "literal_error":
        values = _EXPECTED.findall(ctx["expected"]) or [ctx["expected"]]
        return f"must be {'one of ' if len(values) > 1 else ''}{', '.join(values)}; got {got}"
    if kind in _SIMPLE:
        return f"must be {_SIMPLE[kind]}; got {got}"
    if kind in _BOUND:
        limit = next(iter(ctx.values()))
        return f"must be {_BOUND[kind]} {limit}; got {got}"
    if kind in ("too_short", "too_long"):
        most = "at least" if kind == "too_short" else "at most"
        count = ctx.get("min_length", ctx.get("max_length"))
        return f"must have {most} {count} item{'s' if count != 1 else ''}; got {got}"
    text = str(error.get("msg", kind))
    return f"must be valid ({text[:1].lower()}{text[1:]}); got {got}"


def _data_loc(loc: Loc, data: Any, keep_last: bool) -> Loc:
    """``loc`` without the parts that are not in the data (union tags such as ``specs``)."""
    out: list = []
    for index, part in enumerate(loc):
        if _has(data, part):
            data = data[part]
        elif not (keep_last and index == len(loc) - 1):
            continue
        out.append(part)
    return tuple(out)


def _has(data: Any, part: str | int) -> bool:
    if isinstance(data, Mapping):
        return part in data
    return isinstance(data, list | tuple) and isinstance(part, int) and part < len(data)


def _fields_at(root: type[BaseModel], loc: Loc) -> list[str]:
    """Field names of the model at ``loc`` below ``root`` (a target also takes ``extends``)."""
    annotation: Any = root
    for part in loc:
        annotation = _step(annotation, part)
    models = [option for option in _options(annotation) if _is_model(option)]
    if not models:
        return []
    extra = ["extends"] if models[0].__name__ == "TargetConfig" else []
    return sorted([*models[0].model_fields, *extra])


def _step(annotation: Any, part: str | int) -> Any:
    for option in _options(annotation):
        if _is_model(option) and part in option.model_fields:
            return option.model_fields[part].annotation
        if get_origin(option) is dict and isinstance(part, str):
            return get_args(option)[1]
        if get_origin(option) in (tuple, list) and isinstance(part, int):
            return get_args(option)[0]
    return None


def _options(annotation: Any) -> list[Any]:
    """The alternatives of a type, through ``Annotated``, ``Optional`` and unions."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _options(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return [option for arg in get_args(annotation) for option in _options(arg)]
    return [] if annotation is None else [annotation]


def _is_model(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, BaseModel)
