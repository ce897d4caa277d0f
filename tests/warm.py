"""Folders a test run owns and shares among its pytest-xdist workers: warm builds made once.

A CMake tree, a built project or a stage store that several test modules need is made once
per run, by whichever worker asks first, in ``run_folder``; the others wait on its lock and
then use it. The folder is the run's own (the controller's ``--basetemp``; pytest keeps the
last three), so it always exists and is writable, with or without pytest's cache plugin
(``-p no:cacheprovider``) and in a read-only checkout. ``$ETHOSU_TEST_BUILDS`` names a folder
to keep the runtime CMake trees in across runs instead (the edit loop; ccache covers fresh
trees either way).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ENV = "ETHOSU_TEST_BUILDS"


def run_folder(tmp_path_factory) -> Path:
    """``<basetemp>/shared``: the run's folder, the same path in every xdist worker (a worker's
    basetemp is ``<the controller's>/popen-gwN``)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / "shared"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def kept_folder(tmp_path_factory) -> Path:
    """``$ETHOSU_TEST_BUILDS`` when set (kept across runs), else ``run_folder``."""
    kept = os.environ.get(ENV, "").strip()
    if not kept:
        return run_folder(tmp_path_factory)
    folder = Path(kept).expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextmanager
def locked(folder: Path) -> Iterator[Path]:
    """Hold an exclusive lock on ``folder`` (on ``<folder>.lock`` beside it) while the block
    runs: two workers never build in one folder at once. The lock goes with the process, so a
    killed worker never leaves it held."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield folder
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def once(folder: Path, make: Callable[[Path], None]) -> Path:
    """``make(folder)`` unless an earlier call (any worker) finished it; returns ``folder``.

    A ``make`` that failed leaves no mark, so the next caller starts again from an empty
    folder (and fails with its own message) instead of using half a build.
    """
    done = folder / ".made"
    with locked(folder):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            make(folder)
            done.touch()
    return folder
