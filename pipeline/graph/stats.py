"""Each file stat'ed once while doit checks which tasks are up to date (issue 13).

A no-op build of hundreds of targets asks for the same files' stats over and over: a
``build:<target>`` task depends on every stage output of its models, which other targets
share (200 targets x 8 models: ~13,000 file_dep stats of ~800 files), and doit stats each
target once more after our ``outputs_unchanged`` did. Here a stat is kept until a task runs:
doit asks the checker for the new state of a task's file_dep as soon as it succeeded (in the
main process, also with ``-n N``), and that forgets every kept stat, so a file a task wrote
is never seen with its old stat. A task with no file_dep (none of ours that writes files)
would not forget them.

doit hashes a file_dep whose modification time moved but whose size did not, and keeps
hashing it on every build until the task runs again (it saves states only then): a stage
that reran and restored the same bytes (a code edit, a ``touch``) left each ``build:<target>``
reading its file_dep's bytes on every later no-op build. The checker keeps what it hashed in
``<build>/.doit.md5`` (path, size, modification and change time in ns, inode -> md5): a
file is hashed again only when one of those moved; any write moves the change time, which no
program can set back.
"""

from __future__ import annotations

import atexit
import json
import os
from pathlib import Path

from doit import dependency

_KEPT: dict[str, os.stat_result] = {}
DIGEST_FILE = ".doit.md5"
_digests: dict | None = None  # (path, size, mtime_ns, ctime_ns, inode) -> md5, when loaded
_used: dict = {}  # the entries of this build: what is written back
_hashed: list = []  # the entries hashed by this build
_where: Path | None = None  # <build>/.doit.md5 (project.load); None: kept in memory only


def keep_digests_in(build: Path) -> None:
    """Keep the hashes of the checker in ``<build>/.doit.md5`` between builds."""
    global _where, _digests
    _where, _digests = Path(build) / DIGEST_FILE, None


def _load() -> dict:
    global _digests
    if _digests is None:
        _digests = {}
        try:
            for *key, md5 in json.loads(_where.read_text()):
                _digests[tuple(key)] = md5
        except (OSError, ValueError, TypeError, AttributeError):
            pass  # none yet, unreadable or foreign: hash again
    return _digests


def digest(path: str, found: os.stat_result) -> str:
    """doit's md5 of ``path``, whose stat is ``found``: hashed once per stat."""
    key = (path, found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino)
    md5 = _load().get(key)
    if md5 is None:
        md5 = _digests[key] = dependency.get_file_md5(path)
        if _where is not None and not _hashed:
            atexit.register(_save)  # only a build that hashed something writes the file
        _hashed.append(key)
    _used[key] = md5
    return md5


def _save() -> None:
    """Write this build's hashes (atomically; best effort)."""
    from pipeline.errors import UserError
    from pipeline.files import write_atomic

    if _where is None:  # the build folder was unset after hashing began (in-process tests)
        return
    rows = [[*key, md5] for key, md5 in _used.items()]
    try:  # a link there was named before the build started (lock.check_build_folder)
        write_atomic(_where, json.dumps(rows).encode(), root=_where.parent)
    except (OSError, UserError):
        pass


def stat(path: str) -> os.stat_result:
    """``os.stat(path)``, kept until a task runs (OSError is raised, not kept)."""
    found = _KEPT.get(path)
    if found is None:
        found = _KEPT[path] = os.stat(path)
    return found


def forget() -> None:
    """Drop every kept stat (a task ran: the files it wrote have new ones)."""
    _KEPT.clear()


class MD5Checker(dependency.MD5Checker):
    """doit's default checker with the stats kept above. Same name and saved state as doit's
    own, so switching to it reruns nothing (doit drops the records when the name changes)."""

    def exists(self, file_path):
        try:
            stat(file_path)
        except OSError:
            return False
        return True

    def info(self, file_path):
        return stat(file_path)

    def check_modified(self, file_path, file_stat, state):
        timestamp, size, file_md5 = state
        if file_stat.st_mtime == timestamp:
            return False
        if file_stat.st_size != size:
            return True
        return file_md5 != digest(file_path, file_stat)

    def get_state(self, dep, current_state):
        forget()
        return super().get_state(dep, current_state)
