"""doit's records (``<build>/.doit.db``, sqlite): check them before doit opens them.

A damaged database (a crash of the disk, a truncated copy, a stray write) makes doit fail on
every command until the file is removed by hand. Before a build, the file is checked (sqlite's
``quick_check`` plus a decode of every task's JSON record: a few milliseconds); a damaged one
is moved aside with one line saying so, and doit starts new records. Nothing is lost but the
records: every task then checks its outputs against the store, which restores them.

Decoding every record costs ~90 ms once a project has hundreds of targets (issue 13). So a
file that passed the check, and the file a build that started from it leaves, are stamped
(``<db>.checked``: size, modification and change times in ns, inode and device of the file
and of sqlite's side files); while all of them match, the check is skipped. Any write to the
file, a copy over it, a truncation, a ``touch`` or a replacement moves its change time (which
no program can set back), so the next build checks it in full again.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from pathlib import Path

from pipeline.errors import UserError
from pipeline.files import remove, rename, write_atomic


def damage(path: Path) -> str | None:
    """Why the doit database at ``path`` is unusable, or None (also when it does not exist)."""
    import sqlite3

    if not path.exists():
        return None
    try:
        with open(path, "rb") as handle:
            header = handle.read(16)
        if header and header != b"SQLite format 3\x00":
            return "it is not an SQLite database"
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            check = connection.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                return f"SQLite's check failed: {check[0][0]}"
            tables = {row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            if "doit" in tables:
                for (data,) in connection.execute("SELECT task_data FROM doit"):
                    if not isinstance(json.loads(data), dict):
                        return "a task record is not a JSON object"
        finally:
            connection.close()
    except (OSError, sqlite3.Error, ValueError, TypeError) as error:
        return f"{type(error).__name__}: {error}"
    return None


STAMP_SUFFIX = ".checked"
_SIDE_FILES = ("-journal", "-wal", "-shm")  # sqlite's side files belong to the database


def _stamp(path: Path) -> list:
    """What identifies the database's current bytes without reading them (None: absent)."""
    stamp = []
    for name in ("", *_SIDE_FILES):
        try:
            found = os.stat(f"{path}{name}")
        except OSError:
            stamp.append(None)
            continue
        stamp.append([found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino,
                      found.st_dev])
    return stamp


def _checked_before(path: Path, stamp: list) -> bool:
    try:
        return json.loads(Path(f"{path}{STAMP_SUFFIX}").read_text()) == stamp
    except (OSError, ValueError):
        return False


def _remember(path: Path, stamp: list) -> None:
    """Write the stamp of a database that passed the check (atomically; best effort: a
    link there was named before the build started, ``lock.check_build_folder``)."""
    try:
        if stamp[0] is None:
            remove(Path(f"{path}{STAMP_SUFFIX}"), path.parent)
            return
        write_atomic(Path(f"{path}{STAMP_SUFFIX}"), json.dumps(stamp).encode(), path.parent)
    except (OSError, UserError):
        pass


_AT_EXIT: set[str] = set()


def _remember_at_exit(path: Path) -> None:
    """Stamp the database again when this build ends: doit writes its records on every build
    (its group tasks count as run), through sqlite's transactions, in this process and under
    the build folder's lock; what a killed build leaves is not stamped, so checked again."""
    if str(path) not in _AT_EXIT:
        _AT_EXIT.add(str(path))
        atexit.register(lambda: _remember(path, _stamp(path)))


def repair(path: Path) -> Path | None:
    """Move a damaged doit database aside (one line on stderr); return where it went.

    A database whose stamp matches the one of its last passed check is not read again."""
    stamp = _stamp(path)
    if stamp[0] is not None and _checked_before(path, stamp):
        _remember_at_exit(path)
        return None
    why = damage(path)
    if why is None:
        _remember(path, stamp)
        _remember_at_exit(path)
        return None
    remove(Path(f"{path}{STAMP_SUFFIX}"), path.parent)
    dest = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    rename(path, dest, path.parent)
    for suffix in _SIDE_FILES:  # sqlite's side files belong to the old one
        remove(Path(f"{path}{suffix}"), path.parent)
    print(f"warning: doit's records {path} are damaged ({why}); moved to {dest}. Starting new "
          "records: this build checks every task against the store (restores, no recompute "
          "of what is cached)", file=sys.stderr, flush=True)
    return dest
