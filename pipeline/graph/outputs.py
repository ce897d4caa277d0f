"""Notice a task's output files changed outside the build, so the next build rewrites them.

doit only checks that a task's targets exist. Each of our tasks therefore returns, as its
doit values, the size, modification time and sha256 of every file it wrote; the ``uptodate``
check ``outputs_unchanged`` compares them with the files on disk. A stat is all a no-op build
costs: only a file whose size or time moved is hashed, so a ``touch`` reruns nothing while an
edit, truncation or replacement reruns the task, which restores the file from the store.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from pipeline.cache.key import file_digest
from pipeline.graph import stats

VALUES_KEY = "outputs"  # the key of our record in doit's saved values
LOADED_KEY = "loaded"


def _stats(paths: Iterable[Path]) -> dict:
    entries = {}
    for path in paths:
        stat = os.stat(path)
        entries[str(path)] = [stat.st_size, stat.st_mtime_ns, file_digest(Path(path))]
    return entries


def record(paths: Iterable[Path], loaded: Iterable[Path] = ()) -> dict:
    """doit values for files just written: ``{"outputs": {path: [size, mtime_ns, sha256]}}``,
    and ``"loaded"`` likewise for the local modules the stage imported (``graph/loaded.py``)."""
    values = {VALUES_KEY: _stats(paths)}
    loaded = [p for p in loaded if os.path.isfile(p)]
    if loaded:
        values[LOADED_KEY] = _stats(loaded)
    return values


def _changed(task, path: str, entry: list, what: str) -> bool:
    size, mtime_ns, digest = entry
    try:
        stat = stats.stat(path)
    except OSError:
        return True
    if stat.st_size == size and stat.st_mtime_ns == mtime_ns:
        return False
    if stat.st_size != size or file_digest(Path(path)) != digest:
        print(f"   {task.name}: {path} {what}", file=sys.stderr, flush=True)
        return True
    return False


def outputs_unchanged(task, values) -> bool:
    """doit ``uptodate`` check: every target is as the task's last run left it.

    False (the task reruns) when no record exists yet, or a target is missing, resized or
    holds other bytes than recorded; one line on stderr names the first changed file."""
    recorded = values.get(VALUES_KEY)
    if not isinstance(recorded, dict):
        return False
    for target in task.targets:
        entry = recorded.get(str(target))
        if not entry or _changed(task, str(target), entry,
                                 "was changed outside the build; rewriting it"):
            return False
    return True


def loaded_unchanged(task, values) -> bool:
    """doit ``uptodate`` check: no local module the stage imported at run time has changed."""
    for path, entry in (values.get(LOADED_KEY) or {}).items():
        if _changed(task, path, entry, "(imported by the model at run time) changed"):
            return False
    return True


# doit takes inspect.signature() of every uptodate callable of every task on every build, to
# pass `task` and `values` (~15 us each: thousands at hundreds of targets, issue 13); inspect
# returns a callable's own ``__signature__`` at once.
for _check in (outputs_unchanged, loaded_unchanged):
    _check.__signature__ = inspect.signature(_check)
