"""The project's code as this process runs it, so a stage never stores what old code computed
under the key of files edited since.

A stage's key covers its code by the content of its files (``graph/code.py``), read when the
key is made; the stage runs the modules this process imported, maybe minutes earlier. A
developer editing ``pipeline/`` while a build runs would otherwise get the old code's output
stored under the new code's key: a stale artifact that every later build restores. So each
project module's file size and time are taken when it is imported (``install``), and a stage
that ran code whose file changed since (``changed_since_import``) stores nothing and fails,
naming the file.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Iterable
from pathlib import Path

PACKAGES = ("pipeline.", "models.")  # the project's importable packages (their submodules)
REPO_DIR = Path(__file__).resolve().parents[2]

_STAMPS: dict[str, tuple[int, int]] = {}  # resolved file -> (mtime_ns, size) when imported


def _stat(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def stamp(path: str | Path) -> None:
    """Record ``path``'s size and time as the code this process runs (first record kept)."""
    resolved = str(Path(path).resolve())
    if resolved not in _STAMPS and (now := _stat(resolved)) is not None:
        _STAMPS[resolved] = now


class _StampOnImport(importlib.abc.MetaPathFinder):
    """Takes the stamp of a project module's file as it is found, just before it is read."""

    def find_spec(self, name, path=None, target=None):
        if path is None or not name.startswith(PACKAGES):
            return None  # top-level packages are stamped by ``install``
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.has_location and spec.origin:
            stamp(spec.origin)
        return spec


def install() -> None:
    """Stamp every project module imported from now on, and those already imported (as they
    are now: the best record there is for them)."""
    if not any(isinstance(f, _StampOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _StampOnImport())
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and str(Path(file).resolve()).startswith(str(REPO_DIR) + os.sep):
            stamp(file)


def changed_since_import(files: Iterable[Path]) -> list[Path]:
    """Those of ``files`` this process imported and whose size or time differs now."""
    changed = []
    for path in files:
        resolved = str(Path(path).resolve())
        if resolved in _STAMPS and _stat(resolved) != _STAMPS[resolved]:
            changed.append(Path(resolved))
    return changed
