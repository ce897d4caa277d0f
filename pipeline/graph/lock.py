"""One build at a time per build folder: an advisory lock on ``<build>/.lock``.

Two ``doit build`` (or a ``doit clean``) in the same build folder would race on CMake trees,
stage work areas and doit's records. The second one waits, saying so, until the first ends;
the lock is the kernel's (``flock``), so a killed build never leaves it held. Commands that
only read (``doit list``, ``info``, ``help``) take no lock. A ``doit clean`` takes it too, so
it never pulls files from under a running build. Holding the lock, a build first sweeps the
work areas a killed build left (``sweep_work``).

Before any of that, ``check_build_folder`` makes sure none of the build's own files and
folders is a symbolic link (a CI cache restored from a tarball, a mistaken ``ln -s``): the
build would write or delete through it. One line names it; ``doit clean`` removes the link
instead (never what it points to).
"""

from __future__ import annotations

import fcntl
import os
import stat
import sys
from pathlib import Path

from pipeline.files import UnsafePathError, check_own, make_dirs, open_no_follow, remove

READ_ONLY_COMMANDS = ("list", "info", "help", "dumpdb", "tabcompletion")
_held: dict[Path, int] = {}  # build folder -> open descriptor, kept for the process's life
# What the build writes at the top of its folder (besides one folder per target).
OWN_FILES = (".lock", ".work", ".stages", ".doit.db", ".doit.db-journal", ".doit.db-wal",
             ".doit.db-shm", ".doit.db.checked", ".doit.md5", ".plan-cache.pickle",
             "report.html")


_DOIT_COMMANDS = ("run", "clean", "list", "info", "help", "forget", "ignore", "auto", "dumpdb",
                  "strace", "tabcompletion", "reset-dep")


def is_clean(argv: list[str]) -> bool:
    """Whether doit's command line is ``doit clean`` (``-f dodo.py -d DIR`` may come first)."""
    return next((a for a in argv[1:] if a in _DOIT_COMMANDS), "run") == "clean"


def check_build_folder(build: Path, targets: list[str], clean: bool = False) -> None:
    """Raise ``UnsafePathError`` naming the first of the build's own paths (its top-level
    files and folders, the target folders, the stage folders) that is a symbolic link; with
    ``clean``, remove every such link instead. A few ``lstat`` calls: no-op builds too."""
    build = Path(build)
    names = [*OWN_FILES, *targets]
    if os.path.isdir(build / ".stages") and not os.path.islink(build / ".stages"):
        names += [f".stages/{e.name}" for e in os.scandir(build / ".stages")]
    for name in names:
        path = build / name
        try:
            found = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(found.st_mode):
            if not clean:
                raise UnsafePathError(path, build)
            remove(path, build, say=True)


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
    fd = open_no_follow(build / ".lock", build, os.O_RDWR | os.O_CREAT)
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
    build, work = Path(build), Path(build) / ".work"
    check_own(work, build)  # a link there is an UnsafePathError, never followed
    if work.is_dir():
        leftovers = list(work.iterdir())
    else:  # the first build of this version in this folder
        leftovers = list((build / ".stages").glob("*/**/.work-*"))
    for path in leftovers:
        remove(path, build)  # a link is removed itself, never followed
    make_dirs(work, build)
    return len(leftovers)
