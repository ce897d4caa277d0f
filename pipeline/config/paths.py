"""Field types for paths in targets.yaml: relative to the YAML file, checked to exist."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator, ValidationInfo, WithJsonSchema, model_serializer

from pipeline.config.base import StrictModel, problem, resolve_path, show
from pipeline.config.vela_ini import read_vela_ini

_REF = re.compile(r"^(?P<file>.+\.py):(?P<attr>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)$")
REF_FORMAT = "<file>.py:<name>"


class SourceRef(StrictModel):
    """A Python object named by ``path/to/file.py:Name`` (the file is never imported here).

    Attributes:
        path: absolute path of the ``.py`` file.
        attr: the object's (possibly dotted) name inside that file.
    """

    path: Path
    attr: str

    def __str__(self) -> str:
        return f"{self.path}:{self.attr}"

    @model_serializer
    def _as_text(self) -> str:
        # Dumps as written in targets.yaml (with an absolute path), so it validates again.
        return str(self)


def _source_ref(value, info: ValidationInfo) -> SourceRef:
    if isinstance(value, SourceRef):
        return value
    match = _REF.match(value) if isinstance(value, str) else None
    if not match:
        raise problem(f"must be {REF_FORMAT}, e.g. models/add.py:AddModel; got {show(value)}")
    path = resolve_path(match["file"], info)
    if not path.is_file():
        raise problem(f"must name an existing file; got {show(value)} ({path} does not exist)")
    return SourceRef(path=path, attr=match["attr"])


def _existing_dir(value, info: ValidationInfo) -> Path:
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str):
        raise problem(f"must be a folder path; got {show(value)}")
    path = resolve_path(value, info)
    if not path.is_dir():
        raise problem(f"must be an existing folder; got {show(value)} ({path} is not one)")
    return path


def _vela_ini(value, info: ValidationInfo) -> Path:
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str):
        raise problem(f"must be a path to a .ini file; got {show(value)}")
    path = resolve_path(value, info)
    if path.suffix != ".ini":  # Vela refuses other extensions
        raise problem(f"must be a Vela configuration file ending in .ini; got {show(value)}")
    if not path.is_file():
        raise problem(f"must be an existing file; got {show(value)} ({path} does not exist)")
    try:
        read_vela_ini(path)
    except ValueError as exc:
        raise problem(f"must be a Vela configuration file; got {show(value)}: {exc}") from None
    return path


SourceField = Annotated[
    SourceRef,
    BeforeValidator(_source_ref),
    WithJsonSchema({"type": "string", "pattern": r"^.+\.py:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$",
                    "description": "<file>.py:<name>, the file relative to targets.yaml"}),
]
ExistingDir = Annotated[
    Path,
    BeforeValidator(_existing_dir),
    WithJsonSchema({"type": "string", "description": "folder, relative to targets.yaml"}),
]
VelaIniFile = Annotated[
    Path,
    BeforeValidator(_vela_ini),
    WithJsonSchema({"type": "string", "pattern": r"\.ini$",
                    "description": "Vela config file, relative to targets.yaml"}),
]
