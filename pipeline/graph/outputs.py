"""Notice a task's output files changed outside the build, so the next build rewrites them.

doit only checks that a task's targets exist. Each of our tasks therefore returns, as its
doit values, the size, modification time and sha256 of every file it wrote; the ``uptodate``
check ``outputs_unchanged`` compares them with the files on disk. A stat is all a no-op build
costs: only a file whose size or time moved is hashed, so a ``touch`` reruns nothing while an
edit, truncation or replacement reruns the task, which restores the file from the store.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from pipeline.cache.key import file_digest

VALUES_KEY = "outputs"  # the key of our record in doit's saved values


def record(paths: Iterable[Path]) -> dict:
    """doit values for files just written: ``{"outputs": {path: [size, mtime_ns, sha256]}}``."""
    entries = {}
    for path in paths:
        stat = os.stat(path)
        entries[str(path)] = [stat.st_size, stat.st_mtime_ns, file_digest(path)]
    return {VALUES_KEY: entries}


def outputs_unchanged(task, values) -> bool:
    """doit ``uptodate`` check: every target is as the task's last run left it.

    False (the task reruns) when no record exists yet, or a target is missing, resized or
    holds other bytes than recorded; one line on stderr names the first changed file."""
    recorded = values.get(VALUES_KEY)
    if not isinstance(recorded, dict):
        return False
    for target in task.targets:
        entry = recorded.get(str(target))
        if not entry:
            return False
        size, mtime_ns, digest = entry
        try:
            stat = os.stat(target)
        except OSError:
            return False  # doit reports the missing target itself
        if stat.st_size == size and stat.st_mtime_ns == mtime_ns:
            continue
        if stat.st_size != size or file_digest(Path(target)) != digest:
            print(f"   {task.name}: {target} was changed outside the build; rewriting it",
                  file=sys.stderr, flush=True)
            return False
    return True
