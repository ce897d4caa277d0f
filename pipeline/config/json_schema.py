"""JSON Schema of targets.yaml as written (``defaults``, ``models``, ``targets``, ``extends``).

Editors using yaml-language-server complete and check the file with it
(``# yaml-language-server: $schema=./targets.schema.json``). It is generated from the
pydantic models, field descriptions from their docstrings' ``Attributes:`` sections, so it
cannot drift. Rules that need several fields or the vela.ini (pairings, system configs,
memory modes) are left to ``python -m pipeline.config check``.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from pipeline.config.models import Calibration, InputSpec, ModelConfig
from pipeline.config.npu import NpuConfig
from pipeline.config.schema import TargetConfig
from pipeline.config.tosa_spec import DEFAULT_TOSA
from pipeline.config.vgf import VgfConfig

_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
_DOCUMENTED = (TargetConfig, ModelConfig, NpuConfig, VgfConfig, InputSpec, Calibration)
# Defaults that depend on other fields: the schema must not claim a fixed one.
_DERIVED = {"NpuConfig": ("cop_format", "separate_io_regions"), "TargetConfig": ("tosa",)}


def targets_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a targets.yaml file."""
    _, top = models_json_schema([(TargetConfig, "validation"), (ModelConfig, "validation")],
                                ref_template="#/$defs/{model}")
    defs = _tidy(top["$defs"])
    for model in _DOCUMENTED:
        _describe(defs[model.__name__], model)
    for name, fields in _DERIVED.items():
        for field in fields:
            defs[name]["properties"][field].pop("default", None)
    target = defs.pop("TargetConfig")
    target["properties"]["tosa"]["description"] += f" Default: {DEFAULT_TOSA}."
    target.pop("required", None)  # defaults: and extends: may supply any field
    defs["Defaults"] = {**copy.deepcopy(target), "title": "Defaults",
                        "description": "Values every target starts from."}
    target["properties"]["extends"] = {
        "type": "string", "pattern": _NAME_PATTERN,
        "description": "Another target whose resolved values this one starts from.",
    }
    defs["Target"] = {**target, "title": "Target"}
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ethosu-pipeline targets.yaml",
        "type": "object",
        "additionalProperties": False,
        "required": ["models", "targets"],
        "properties": {
            "defaults": {"$ref": "#/$defs/Defaults"},
            "models": _names_to("ModelConfig", "PyTorch models by name."),
            "targets": _names_to("Target", "Build targets by name."),
        },
    }
    used = set(re.findall(r'"#/\$defs/(\w+)"', json.dumps([schema, defs])))
    return {**schema, "$defs": {k: defs[k] for k in sorted(defs) if k in used}}


def _names_to(ref: str, description: str) -> dict[str, Any]:
    return {"type": "object", "description": description, "minProperties": 1,
            "propertyNames": {"pattern": _NAME_PATTERN},
            "additionalProperties": {"$ref": f"#/$defs/{ref}"}}


def _tidy(node: Any) -> Any:
    """Drop ``"default": null`` where null is not allowed (derived defaults) and spell
    length limits on arrays ``minItems``/``maxItems``."""
    if isinstance(node, list):
        return [_tidy(v) for v in node]
    if not isinstance(node, dict):
        return node
    allows_null = any(o.get("type") == "null" for o in node.get("anyOf", ()))
    out = {}
    for key, value in node.items():
        if key == "default" and value is None and not allows_null:
            continue
        if node.get("type") == "array" and key in ("minLength", "maxLength"):
            key = key.replace("Length", "Items")
        out[key] = _tidy(value)
    return out


def _describe(definition: dict[str, Any], model: type[BaseModel]) -> None:
    """Model summary and per-field text from the class docstring (Google style)."""
    doc = inspect.cleandoc(model.__doc__ or "").replace("``", "")
    summary, _, rest = doc.partition("\n\nAttributes:\n")
    definition["description"] = summary.strip()
    for name, text in re.findall(r"^ {4}(\w+): (.+(?:\n {8}.+)*)", rest, flags=re.MULTILINE):
        if name in definition["properties"]:
            definition["properties"][name]["description"] = " ".join(text.split())
