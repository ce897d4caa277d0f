"""Shared pieces of the config models: the closed base class and cross-field rules.

A cross-field rule is a generator on a model (``_rules``) that yields ``Broken`` items.
``RuledModel`` runs it after pydantic validated the fields and, when some fields failed,
still runs it on the fields that did validate, so one pass reports every problem.
"""

from __future__ import annotations

import difflib
import errno
import functools
import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, NamedTuple, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

RULE_ERROR = "config_rule"

Loc = tuple[str | int, ...]


class Broken(NamedTuple):
    """One broken rule: the message and the fields to blame, best first.

    The first field the user actually wrote gets the message (a derived default is never
    blamed when a written value caused it).
    """

    message: str
    locs: tuple[Loc, ...]


def broken(message: str, *fields: str) -> Broken:
    """A ``Broken`` blaming dotted ``fields`` (``"npu.cop_format"``), best first."""
    return Broken(message, tuple(
        tuple(int(p) if p.isdigit() else p for p in f.split(".")) for f in fields))


# difflib's cost grows with the product of the lengths: a name past these bounds is no typo
# of a field or model name, and comparing it (5,000 YAML aliases of a 400 KB string) would
# take minutes. Such a name gets the same message without the did-you-mean.
_SUGGEST_CHARS = 100
_SUGGEST_OPTIONS = 1000


def suggest(name: str, options) -> str | None:
    """``did you mean 'x'?`` for the closest of ``options``, or None (also for a name or a
    list of options too long to be worth comparing)."""
    options = list(options)
    if len(name) > _SUGGEST_CHARS or len(options) > _SUGGEST_OPTIONS:
        return None
    return _suggest(name, tuple(o for o in options if isinstance(o, str)))


@functools.lru_cache(maxsize=256)
def _suggest(name: str, options: tuple[str, ...]) -> str | None:
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None


def unknown(what: str, name: Any, options, *, named: bool = False) -> str:
    """``unknown field; did you mean 'x'?`` or ``unknown model 'y'; must be one of a, b``.

    ``named`` puts the name in the message (for values; a key is already in the path).
    """
    hint = suggest(name, options) if isinstance(name, str) else None
    label = f"unknown {what} {show(name)}" if named else f"unknown {what}"
    if not hint and not options:
        return f"{label}; no {what} is defined"
    return f"{label}; {hint or 'must be one of ' + ', '.join(map(plain, options))}"


def problem(message: str) -> PydanticCustomError:
    """An error whose message is already in the ``must be ...; got ...`` grammar."""
    return PydanticCustomError(RULE_ERROR, "{message}", {"message": message})


_SHOWN = 100  # characters of a long value kept in a message


def show(value: Any) -> str:
    """A value as the user wrote it in YAML: ``'text'``, ``12``, ``true``, ``null``, ``.nan``.

    Long values are cut to their first ``_SHOWN`` characters, so one message stays one line
    of readable length.
    """
    if isinstance(value, str) and len(value) > 2 * _SHOWN:
        return _show_long(value)
    text = _show(value)
    return text if len(text) <= 2 * _SHOWN else f"{text[:_SHOWN]}… ({len(text)} characters)"


@functools.lru_cache(maxsize=16)
def _show_long(value: str) -> str:
    """A long string, cut; kept, since YAML aliases repeat one long value thousands of times."""
    text = repr(value)
    return f"{text[:_SHOWN]}… ({len(text)} characters)"


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else ("-.inf" if value < 0 else ".inf")
    if isinstance(value, int) and value.bit_length() > 14_000:  # str() refuses > 4300 digits
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{plain(str(k))}: {_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)


def plain(text: str) -> str:
    """``text`` for a message: as it is, or quoted and escaped (``'a\\nb'``) when it holds
    control or other unprintable characters, and cut when it is long."""
    return text if text.isprintable() and len(text) <= 2 * _SHOWN else show(text)


def resolve_path(text: str, info: ValidationInfo) -> Path:
    """``text`` as an absolute, normalised path, relative to the YAML file's folder."""
    base = (info.context or {}).get("base_dir") or Path.cwd()
    try:
        text = os.path.expanduser(text)
    except ValueError:  # a NUL byte; reported by the caller's lookup of the path
        pass
    return Path(os.path.normpath(Path(base) / text))


def os_problem(exc: OSError | ValueError, path: Path) -> str:
    """Why the system cannot look ``path`` up, for a message: ``File name too long: ...``."""
    if not isinstance(exc, OSError):
        return str(exc)  # ValueError: a NUL byte
    reason = exc.strerror or str(exc)
    if exc.errno != errno.ENAMETOOLONG:
        return reason
    name_max, path_max = _limit("PC_NAME_MAX", 255), _limit("PC_PATH_MAX", 4096)
    longest = max(len(os.fsencode(part)) for part in path.parts)
    if longest > name_max:
        return f"{reason}: a name in it has {longest} bytes, over the system's {name_max}"
    return f"{reason}: it has {len(os.fsencode(path))} bytes, over the system's {path_max}"


def _limit(name: str, fallback: int) -> int:
    try:
        return os.pathconf("/", name)
    except (OSError, ValueError):
        return fallback


class StrictModel(BaseModel):
    """Closed, strict, immutable: unknown keys and wrong types are errors, never coerced;
    floats must be finite (``.nan`` and ``.inf`` are refused)."""

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid", allow_inf_nan=False)


class RuledModel(StrictModel):
    """A ``StrictModel`` with derived defaults and cross-field rules."""

    @classmethod
    def _fill_defaults(cls, data: dict[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
        """Fill fields whose default depends on other fields (``data`` is a copy)."""
        return data

    @classmethod
    def _rules(cls, v: Mapping[str, Any], context: Mapping[str, Any]) -> Iterator[Broken]:
        """Yield broken rules; ``v`` holds only fields that validated."""
        return iter(())

    @model_validator(mode="wrap")
    @classmethod
    def _validate_with_rules(cls, data: Any, handler, info: ValidationInfo):
        context = info.context or {}
        if isinstance(data, dict):
            data = cls._fill_defaults(dict(data), context)
        try:
            model = handler(data)
        except ValidationError as exc:
            errors = exc.errors()
            if not isinstance(data, dict):
                raise
            values = _valid_fields(cls, data, errors, context)
            raise _combined(cls, errors, list(cls._rules(values, context))) from None
        rules = list(cls._rules(dict(model), context))
        if rules:
            raise _combined(cls, [], rules)
        return model


class Partial(SimpleNamespace):
    """Stands in for a nested model that failed: its fields that validated, None for others."""

    def __getattr__(self, name: str) -> None:
        return None


def _valid_fields(cls: type[BaseModel], data: dict, errors: list, context) -> dict[str, Any]:
    failed = {e["loc"][0] for e in errors if e["loc"]}
    values: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        if name in failed:
            nested = field.annotation if _is_ruled(field.annotation) else _ruled_option(field)
            if nested is not None and isinstance(data.get(name), dict):
                inner = [{**e, "loc": e["loc"][1:]} for e in errors if e["loc"][:1] == (name,)]
                raw = nested._fill_defaults(dict(data[name]), context)
                values[name] = Partial(**_valid_fields(nested, raw, inner, context))
            continue
        if name in data:
            try:
                values[name] = _adapter(cls, name).validate_python(data[name], context=context)
            except ValidationError:
                continue
        elif not field.is_required():
            default = field.get_default(call_default_factory=True)
            if default is not None or type(None) in get_args(field.annotation):
                values[name] = default
    return values


def _is_ruled(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, RuledModel)


def _ruled_option(field) -> type[RuledModel] | None:
    """The RuledModel in an ``X | None`` annotation, if any."""
    return next((a for a in get_args(field.annotation) if _is_ruled(a)), None)


@functools.cache
def _adapter(cls: type[BaseModel], name: str) -> TypeAdapter:
    field = cls.model_fields[name]
    annotation = field.annotation
    if field.metadata:
        annotation = Annotated[annotation, *field.metadata]
    if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
        return TypeAdapter(annotation)  # a model brings its own (strict) config
    return TypeAdapter(annotation, config=ConfigDict(strict=True, allow_inf_nan=False))


def _combined(cls: type[BaseModel], errors: list, rules: list[Broken]) -> ValidationError:
    details = [_detail(e) for e in errors]
    for rule in rules:
        error = PydanticCustomError(RULE_ERROR, "{message}",
                                    {"message": rule.message, "locs": rule.locs})
        details.append(InitErrorDetails(type=error, loc=rule.locs[0], input=None))
    return ValidationError.from_exception_data(cls.__name__, details)


def _detail(error: dict) -> InitErrorDetails:
    kind = error["type"]
    if kind == RULE_ERROR:
        kind = PydanticCustomError(RULE_ERROR, "{message}", error["ctx"])
    detail = InitErrorDetails(type=kind, loc=error["loc"], input=error["input"])
    if "ctx" in error and not isinstance(kind, PydanticCustomError):
        detail["ctx"] = error["ctx"]
    return detail
