"""One build at a time per build folder: an advisory lock on ``<build>/.lock``.

Two ``doit build`` (or a ``doit clean``) in the same build folder would race on CMake trees,
stage work areas and doit's records. The second one waits, saying so, until the first ends;
the lock is the kernel's (``flock``), so a killed build never leaves it held. Commands that
only read (``doit list``, ``info``, ``help``) take no lock.
"""

from __future__ import annotations

import fcntl
import os
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
