"""Running the user's code (model files, input factories) so that whatever it does ends as a
one-message ``StageError`` naming the user's own line, never as a traceback of ours.

The user's files are told apart from the rest by where they live: anything outside the
Python installation, site-packages and this project. The message names the innermost frame
in such a file: the line that raised (or the call into a library that raised).
"""

from __future__ import annotations

import contextlib
import linecache
import os
import posix
import site
import sys
import sysconfig
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from pipeline.errors import StageError

PIPELINE_DIR = Path(__file__).resolve().parents[1]
# What the user's code may raise that we report as theirs. Not every BaseException: the time
# limit and a real Ctrl-C (pipeline/graph/timeout.py) raise their own, which must get through.
USER_EXCEPTIONS = (Exception, SystemExit, KeyboardInterrupt)
_MESSAGE_CHARS = 300


def _library_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             *site.getsitepackages(), site.getusersitepackages(), str(PIPELINE_DIR),
             *(p for p in sysconfig.get_paths().values() if p)}
    return tuple(str(Path(r).resolve()).rstrip("/") + "/" for r in roots if r)


def is_user_file(filename: str, roots: tuple[str, ...] | None = None) -> bool:
    """Whether a code file is the user's: a real file outside Python, site-packages and us."""
    if not filename or filename.startswith("<"):
        return False  # <frozen importlib._bootstrap>, <string>, FX's <eval_with_key>
    path = str(Path(filename).resolve())
    return not path.startswith(roots if roots is not None else _library_roots())


def _where_in(filename: str, line: int) -> str:
    code = linecache.getline(filename, line).strip()
    return f"{filename}:{line}" + (f" ({code})" if code else "")


def traceback_location(tb: TracebackType | None) -> str:
    """``file:line (code)`` of the innermost frame of a traceback in a user file, or ""."""
    roots = _library_roots()
    found = [f for f in traceback.extract_tb(tb) if is_user_file(f.filename, roots)]
    return _where_in(found[-1].filename, found[-1].lineno) if found else ""


def frame_location(frame: FrameType | None) -> str:
    """``file:line (code)`` of the innermost user frame of a running stack, or ""."""
    roots = _library_roots()
    while frame is not None:
        if is_user_file(frame.f_code.co_filename, roots):
            return _where_in(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return ""


class ProcessExitCalled(SystemExit):
    """``os._exit()`` called by the user's code, raised in its place: it would end the build's
    process at once, without a word and with the status the user's code chose (0: a build
    that built nothing and said nothing)."""

    def __str__(self) -> str:
        return f"os._exit({self.code})"


@contextlib.contextmanager
def exit_refused():
    """Within the block, ``os._exit()`` (``posix._exit``) called by this process's main
    thread raises ``ProcessExitCalled`` instead of ending the process; a forked child (a
    DataLoader worker) or another thread still ends as it asked."""
    real, pid = os._exit, os.getpid()

    def refuse(status: int = 0) -> None:
        import threading

        if os.getpid() != pid or threading.current_thread() is not threading.main_thread():
            real(status)
        raise ProcessExitCalled(status)

    os._exit = posix._exit = refuse
    try:
        yield
    finally:
        os._exit = posix._exit = real


def describe(exc: BaseException, location: str | None = None) -> str:
    """``Type: first line of the message at file:line (code)``; the location is the
    innermost user frame of the traceback unless given."""
    if location is None:
        location = traceback_location(exc.__traceback__)
    if isinstance(exc, ProcessExitCalled):
        return str(exc) + (f" at {location}" if location else "")
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if len(text) > _MESSAGE_CHARS:
        text = text[:_MESSAGE_CHARS] + "..."
    kind = type(exc).__name__
    return (f"{kind}: {text}" if text else kind) + (f" at {location}" if location else "")


def call_user(where: str, what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, a call into the user's code; what it raises becomes a ``StageError``.

    Args:
        where: the task, e.g. ``u85-linux/export``.
        what: what the call must do, e.g. ``make() must build an nn.Module``.

    Raises:
        StageError: ``<where>: <what>; it raised <Type>: <message> at <file>:<line> (code)``.
    """
    try:
        with exit_refused():
            return fn(*args)
    except USER_EXCEPTIONS as exc:
        hint = ""
        if isinstance(exc, SystemExit | KeyboardInterrupt):
            hint = (". Code that exits or stops the process belongs under "
                    "`if __name__ == \"__main__\":`, which the build does not run")
        verb = "called" if isinstance(exc, ProcessExitCalled) else "raised"
        raise StageError(where, f"{what}; it {verb} {describe(exc)}{hint}") from exc
