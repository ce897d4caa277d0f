"""The validated config and its plan, kept between builds while nothing they read changed.

Reading targets.yaml (pure-Python YAML with line numbers, pydantic validation) and planning
(one model's imports read per model, paths built per invocation) cost most of a no-op build
once a project has hundreds of targets (issue 13). Both depend only on

- the bytes of the targets file, the Python environment and this package's code (the
  planning code, and the stages' import closures it records);
- the files and folders they looked at: model sources and the helpers they import, input
  factories, calibration folders, Vela .ini files, runtime sources, Ethos-U SDK trees.

``<build>/.plan-cache.pickle`` keeps the plan and the per-target config dumps (plain data:
loading it imports neither pydantic nor the config models)
with the size, modification time and inode of each file and folder of the second kind (a
folder's time moves when a file is added to or removed from it). A build stats those (a few
hundred at most) and reuses the plan when all match; any difference, an unreadable or
foreign cache file, plans again. What the stages read at run time (modules a model loads
dynamically) is covered by their keys, not by this cache (``graph/loaded.py``).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from pathlib import Path

from pipeline.files import write_atomic
from pipeline.graph.plan import PIPELINE_DIR, REPO_DIR, Plan

CACHE_FILE = ".plan-cache.pickle"
_FORMAT = 1


def _stat(path: Path | str) -> tuple[int, int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size, found.st_ino


def _code_stats() -> dict[str, tuple | None]:
    """Every folder and module of this package: the code that reads targets.yaml and plans,
    and the import closures the plan records as each stage's code (``graph/code.py``)."""
    stats = {}
    pending = [str(PIPELINE_DIR)]
    while pending:
        folder = pending.pop()
        stats[folder] = _stat(folder)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                pending.append(entry.path)
            elif entry.name.endswith(".py"):
                stats[entry.path] = _stat(entry.path)
    return stats


def _header(targets: Path, build: Path) -> dict:
    """What the cache must match before its watched files are even looked at."""
    return {"format": _FORMAT, "python": sys.version, "prefix": sys.prefix,
            "executable": sys.executable, "build": str(build),
            "targets": str(targets), "digest": hashlib.sha256(targets.read_bytes()).hexdigest(),
            "code": _code_stats()}


def watched_paths(plan: Plan, build: Path) -> set[str]:
    """The files and folders outside the build folder the plan was made from."""
    paths: set[str] = set()
    inside = str(build) + os.sep
    for inv in plan.invocations.values():
        for path in inv.inputs.values():
            text = str(path)
            if not text.startswith(inside):
                paths.update((text, os.path.dirname(text)))
        for name in ("calibration_folder", "ethosu_sdk"):
            if name in inv.params:
                paths.add(str(inv.params[name]))
    for top in ("runtime", "cmake"):  # a new folder or file anywhere in the runtime's trees
        paths.update(str(d) for d in (REPO_DIR / top).rglob("*") if d.is_dir())
        paths.add(str(REPO_DIR / top))
    return paths


def read(targets: Path, build: Path) -> tuple[Plan, dict] | None:
    """The cached ``(plan, target configs)`` when still valid, else None."""
    try:
        with open(build / CACHE_FILE, "rb") as handle:
            header = pickle.load(handle)
            if header != _header(targets, build):
                return None
            watched = pickle.load(handle)
            if any(_stat(p) != s for p, s in watched.items()):
                return None
            return pickle.load(handle)
    except Exception:  # missing, truncated, from another version: plan again
        return None


def write(targets: Path, build: Path, plan: Plan, configs: dict) -> None:
    """Keep the config and plan for the next build (atomically; best effort)."""
    header = _header(targets, build)
    watched = {p: _stat(p) for p in sorted(watched_paths(plan, build))}
    data = b"".join(pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
                    for part in (header, watched, (plan, configs)))
    try:
        write_atomic(build / CACHE_FILE, data, root=build)  # never through a link
    except OSError:
        pass
