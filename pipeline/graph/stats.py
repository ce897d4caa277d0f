"""Each file stat'ed once while doit checks which tasks are up to date (issue 13).

A no-op build of hundreds of targets asks for the same files' stats over and over: a
``build:<target>`` task depends on every stage output of its models, which other targets
share (200 targets x 8 models: ~13,000 file_dep stats of ~800 files), and doit stats each
target once more after our ``outputs_unchanged`` did. Here a stat is kept until a task runs:
doit asks the checker for the new state of a task's file_dep as soon as it succeeded (in the
main process, also with ``-n N``), and that forgets every kept stat, so a file a task wrote
is never seen with its old stat. A task with no file_dep (none of ours that writes files)
would not forget them.
"""

from __future__ import annotations

import os

from doit import dependency

_KEPT: dict[str, os.stat_result] = {}


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

    def get_state(self, dep, current_state):
        forget()
        return super().get_state(dep, current_state)
