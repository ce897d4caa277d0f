"""The Python files a stage loaded at run time, beyond its code and input files, so none of
them can go stale: the user's modules an export imported, and the operator files whose
visitors a lowering used (``graph/code.py``).

The plan finds a model file's helpers by reading its ``import`` statements
(``graph/imports.py``); a module imported at run time (``importlib.import_module``, a package
installed in editable mode, ``sys.path`` edits) is not seen that way. A stage therefore
records every module it loaded from outside the standard library, site-packages and this
project, with the operator files it used, and

- the store keeps, beside the entry, the list of those files: the key of the next lookup
  covers their content (two-level keys, as ccache's "direct mode" manifests do), so an edit
  to one is a miss even after ``rm -rf build``;
- the task's doit values keep their size, time and checksum, so the next build sees an
  edit (``outputs.inputs_unchanged``);
- the modules are dropped from ``sys.modules`` afterwards, so the next model in the same
  process imports its own ``helpers.py``, not the previous model's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import site
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

from pipeline.cache.key import canonical_json, file_digest

PIPELINE_DIR = Path(__file__).resolve().parents[1]
REPO_DIR = PIPELINE_DIR.parent


def _library_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             *site.getsitepackages(), site.getusersitepackages(), str(PIPELINE_DIR)}
    roots.update(p for p in sysconfig.get_paths().values() if p)
    return tuple(str(Path(r).resolve()) for r in roots if r)


def is_local(file: str, roots: tuple[str, ...] | None = None) -> bool:
    """Whether a module file is the user's (outside Python, site-packages and this project)."""
    path = str(Path(file).resolve())
    return not any(path == r or path.startswith(r.rstrip("/") + "/")
                   for r in (roots if roots is not None else _library_roots()))


@contextlib.contextmanager
def recording_local_modules() -> Iterator[list[Path]]:
    """Collect (into the yielded list, on exit) the local module files imported inside the
    block, and drop those modules from ``sys.modules``."""
    before = set(sys.modules)
    found: list[Path] = []
    try:
        yield found
    finally:
        roots = _library_roots()
        for name in sorted(set(sys.modules) - before):
            file = getattr(sys.modules.get(name), "__file__", None)
            if file and Path(file).is_file() and is_local(file, roots):
                found.append(Path(file).resolve())
                del sys.modules[name]
        found.sort()


def loaded_key(key: str, record: dict, files: list[Path], base: Path | None) -> tuple[str, dict]:
    """The second-level key: ``key`` plus the content of the files the stage loaded, named
    as the index names them (relative to ``base``: no absolute paths in keys)."""
    digests = {}
    for name, path in zip(_names(files, base), files):
        try:
            digests[name] = file_digest(path)
        except OSError:
            digests[name] = "missing"
    if not digests:
        return key, record
    record = {**record, "loaded": dict(sorted(digests.items()))}
    return hashlib.sha256(canonical_json({"key": key, "loaded": digests}).encode()).hexdigest(), record


def index_key(key: str) -> str:
    """The store key under which the list of loaded files for first-level ``key`` lives."""
    return hashlib.sha256(f"loaded-files:{key}".encode()).hexdigest()


PROJECT = "project:"  # the names of this project's files (the operators a stage used)


def _names(files: list[Path], base: Path | None) -> list[str]:
    names = []
    for path in files:
        path = Path(path)
        if path.is_relative_to(REPO_DIR):
            names.append(PROJECT + path.relative_to(REPO_DIR).as_posix())
        elif base and path.is_relative_to(base):
            names.append(path.relative_to(base).as_posix())
        else:
            names.append(str(path))
    return names


def encode(files: list[Path], base: Path | None) -> bytes:
    """The index's list: files under ``base`` (the model's folder) relative to it, so another
    model with equal sources but its own folder resolves its own helpers; this project's
    files relative to the project, so another checkout resolves its own."""
    return json.dumps(sorted(_names(files, base))).encode()


def decode(data: bytes | None, base: Path | None) -> list[Path]:
    """The files an index lists, resolved against ``base``; [] for no or a malformed index."""
    try:
        names = json.loads(data) if data else []
    except ValueError:
        return []
    if not isinstance(names, list):
        return []
    return [_resolve(n, base) for n in names if isinstance(n, str)]


def _resolve(name: str, base: Path | None) -> Path:
    if name.startswith(PROJECT):
        return (REPO_DIR / name[len(PROJECT):]).resolve()
    return (base / name if base and not Path(name).is_absolute() else Path(name)).resolve()
