"""Field types for paths in targets.yaml: relative to the YAML file, checked to exist."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator, ValidationInfo, WithJsonSchema, model_serializer

from pipeline.config.base import StrictModel, os_problem, plain, problem, resolve_path, show
from pipeline.config.vela_ini import read_vela_ini

# Matched with fullmatch: ``$`` alone would also match before a final newline.
_REF = re.compile(r"^(?P<file>.+\.py):(?P<attr>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)$")
REF_FORMAT = "<file>.py:<name>"
# Where the firmware build looks for Arm's core driver in ``ethosu_sdk``: the first of these
# folders holding both files (``ethosu_rt_find_core_driver`` in cmake/EthosuSdk.cmake).
CORE_DRIVER_DIRS = (".", "core_driver", "core_software/core_driver", "ethos-u-core-driver")
CORE_DRIVER_FILES = ("include/ethosu_driver.h", "CMakeLists.txt")
# What the Linux runtime build compiles from a checkout of Arm's Ethos-U Linux driver stack
# (``npu.driver_stack``; ``ethosu_rt_driver_stack`` in cmake/EthosuDriverStack.cmake).
DRIVER_STACK_FILES = ("driver_library/include/ethosu.hpp", "driver_library/src/ethosu.cpp",
                      "kernel/include/uapi/ethosu.h")


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


def lookup(path: Path, value: str) -> os.stat_result | None:
    """The status of ``path`` (which ``value`` named), or None when nothing is there.

    Raises:
        PydanticCustomError: the system cannot look the path up (a name over 255 bytes, a
            path over the system's limit, a NUL byte, a loop of symbolic links, ...).
    """
    try:
        return path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError) as exc:
        raise problem(f"must be a path the system can look up; got {show(value)} "
                      f"({os_problem(exc, path)})") from None


def _source_ref(value, info: ValidationInfo) -> SourceRef:
    if isinstance(value, SourceRef):
        return value
    match = _REF.fullmatch(value) if isinstance(value, str) else None
    if not match:
        raise problem(f"must be {REF_FORMAT}, e.g. models/add.py:AddModel; got {show(value)}")
    path = resolve_path(match["file"], info)
    found = lookup(path, value)
    if found is None or not stat.S_ISREG(found.st_mode):
        raise problem(f"must name an existing file; got {show(value)} "
                      f"({plain(str(path))} does not exist)")
    return SourceRef(path=path, attr=match["attr"])


def _existing_dir(value, info: ValidationInfo) -> Path:
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str):
        raise problem(f"must be a folder path; got {show(value)}")
    path = resolve_path(value, info)
    found = lookup(path, value)
    if found is None or not stat.S_ISDIR(found.st_mode):
        raise problem(f"must be an existing folder; got {show(value)} "
                      f"({plain(str(path))} is not one)")
    return path


def _ethosu_sdk(value, info: ValidationInfo) -> Path:
    # Checks a handful of names only: the planner walks this folder, so /usr must fail here.
    path = _existing_dir(value, info)
    for folder in CORE_DRIVER_DIRS:
        if all(_is_file(path / folder / name) for name in CORE_DRIVER_FILES):
            return path
    where = ", ".join(f"{f}/" for f in CORE_DRIVER_DIRS[1:])
    raise problem(f"must be an Ethos-U SDK or core driver checkout, with "
                  f"{' and '.join(CORE_DRIVER_FILES)} in it or in one of {where}; "
                  f"got {show(value)} (none of them has both)")


def _driver_stack(value, info: ValidationInfo) -> Path:
    path = _existing_dir(value, info)
    missing = [name for name in DRIVER_STACK_FILES if not _is_file(path / name)]
    if missing:
        raise problem(f"must be a checkout of Arm's ethos-u-linux-driver-stack, with "
                      f"{', '.join(DRIVER_STACK_FILES)} in it; got {show(value)} "
                      f"({', '.join(missing)} missing)")
    return path


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _vela_ini(value, info: ValidationInfo) -> Path:
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str):
        raise problem(f"must be a path to a .ini file; got {show(value)}")
    path = resolve_path(value, info)
    if path.suffix != ".ini":  # Vela refuses other extensions
        raise problem(f"must be a Vela configuration file ending in .ini; got {show(value)}")
    found = lookup(path, value)
    if found is None or not stat.S_ISREG(found.st_mode):
        raise problem(f"must be an existing file; got {show(value)} "
                      f"({plain(str(path))} does not exist)")
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
EthosuSdkDir = Annotated[
    Path,
    BeforeValidator(_ethosu_sdk),
    WithJsonSchema({"type": "string", "description": "folder, relative to targets.yaml"}),
]
DriverStackDir = Annotated[
    Path,
    BeforeValidator(_driver_stack),
    WithJsonSchema({"type": "string", "description": "folder, relative to targets.yaml"}),
]
VelaIniFile = Annotated[
    Path,
    BeforeValidator(_vela_ini),
    WithJsonSchema({"type": "string", "pattern": r"\.ini$",
                    "description": "Vela config file, relative to targets.yaml"}),
]
