"""One build at a time per build folder: an advisory lock on ``<build>/.lock``.

Two ``doit build`` (or a ``doit clean``) in the same build folder would race on CMake trees,
stage work areas and doit's records. The second one waits, saying so, until the first ends;
the lock is the kernel's (``flock``), so a killed build never leaves it held. Commands that
only read (``doit list``, ``info``, ``help``) take no lock. A ``doit clean`` takes it too, so
it never pulls files from under a running build. Holding the lock, a build first sweeps the
work areas a killed build left (``sweep_work``).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
from pathlib import Path

READ_ONLY_COMMANDS = ("list", "info", "help", "dumpdb", "tabcompletion")
_held: dict[Path, int] = {}  # build folder -> open descriptor, kept for the process's life


def needs_lock(argv: list[str]) -> bool:
    """Whether doit's command line (``sys.argv``) may write to the build folder."""
    command = next((a for a in argv[1:] if not a.startswith("-") and "=" not in a), "")
    return command not in READ_ONLY_COMMANDS


def lock_build_folder(build: Path) -> None:
    """Hold ``<build>/.lock`` until this process exits; wait (with a message) while another
    process holds it."""
    build = Path(build)
    if build in _held:
        return
    fd = os.open(build / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
        print(f"waiting for the build running in {build} (pid {holder}) to finish ...",
              file=sys.stderr, flush=True)
        fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    _held[build] = fd


def sweep_work(build: Path) -> int:
    """Remove the stage work areas a killed build left in ``<build>/.work/`` (and, once, the
    ``.work-*`` folders older versions left beside the stage outputs). Call it holding the
    lock: no live build then owns any of them. Returns how many were removed."""
    work = Path(build) / ".work"
    if work.is_dir():
        leftovers = list(work.iterdir())
    else:  # the first build of this version in this folder
        leftovers = list((Path(build) / ".stages").glob("*/**/.work-*"))
    for path in leftovers:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    work.mkdir(exist_ok=True)
    return len(leftovers)
