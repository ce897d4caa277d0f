"""A time limit on every stage, and Ctrl-C without a traceback.

A stage that never ends (an endless loop in a model file, a tool that hangs) would hang the
build. Each stage therefore runs under a limit: ``timeout=SECONDS`` on doit's command line,
else ``$ETHOSU_PIPELINE_TIMEOUT``, else ``DEFAULT_SECONDS``; 0 is no limit. It is not part of
any key: it decides whether a stage may finish, never what it writes.

The limit is a SIGALRM interval timer in the process running the action (doit's main
process, or its worker with ``-n N``; not available in threads: ``-P thread`` runs without a
limit). When it expires the handler stops the processes the stage started (Vela, CMake and
whatever they started: SIGTERM, then SIGKILL after a grace) and raises ``_TimedOut`` into the
stage; Python code is interrupted at its next bytecode, a blocking ``subprocess.run`` kills
its child as it unwinds. One limit per stage covers every command of it, so no tool needs a
``timeout=`` of its own. The interruption repeats every few seconds, in case the user's code
swallowed it (a bare ``except:``); a stage still running ``_HARD_STOP`` seconds later ends
the build from a watchdog thread (one line, exit status 1).

A Ctrl-C while a stage runs raises ``_Interrupted``, so that a ``KeyboardInterrupt`` the
user's own code raises is told apart from a real one (``export/user_code.py`` reports the
former as the user's error); the real one stops the build and, like a Ctrl-C anywhere else,
prints one line instead of doit's traceback (``configure`` installs the hook).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import StageError, UserError, see
from pipeline.export.user_code import frame_location

# Real models export in a minute or two (Hugging Face ones included), a cold runtime CMake
# build takes a few minutes, Vela and the reference model less: 30 minutes is over ten times
# the slowest stage seen, yet stops a hung build well before a CI job's own limit (GitLab's
# default is one hour) kills it without a word.
DEFAULT_SECONDS = 1800.0
ENV = "ETHOSU_PIPELINE_TIMEOUT"
_REPEAT = 2.0  # seconds between repeats of the interruption once the limit has passed
_HARD_STOP = 30.0  # seconds past the limit after which a stage that will not stop ends the build
_GRACE = 5.0  # seconds the stopped tools get to clean up after SIGTERM, before SIGKILL
_UNSET = object()
_limit: Any = _UNSET  # set by configure(); otherwise read from the environment when used


class _TimedOut(BaseException):
    """Raised into a stage at its time limit; a BaseException so ``except Exception`` in the
    user's code or a library does not swallow it."""


class _Interrupted(BaseException):
    """A real Ctrl-C (SIGINT) while a stage runs."""


def parse(text: str, name: str) -> float | None:
    """Seconds from ``text`` (None for 0: no limit).

    Raises:
        UserError: not a finite number >= 0.
    """
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise UserError(f"{name}={text}: {name} must be a number of seconds >= 0 (0: no "
                        f"limit); got {text!r} {see('docs/commands.md#timeout')}")
    return seconds or None


def resolve(value: str | None, environ: Mapping[str, str]) -> float | None:
    """The limit: ``timeout=`` (``value``), else ``$ETHOSU_PIPELINE_TIMEOUT``, else the default."""
    if value is not None:
        return parse(value, "timeout")
    if environ.get(ENV, "").strip():
        return parse(environ[ENV].strip(), ENV)
    return DEFAULT_SECONDS


def configure(value: str | None) -> None:
    """Fix the limit once, when dodo.py loads (a bad value fails there, before any stage),
    and make an interrupted build print one line. Worker processes (``-n``) inherit both."""
    global _limit
    _limit = resolve(value, os.environ)
    if sys.excepthook is sys.__excepthook__:
        sys.excepthook = _interrupted_hook


def limit() -> float | None:
    """The stage time limit in seconds, None for no limit."""
    return resolve(None, os.environ) if _limit is _UNSET else _limit


def _interrupted_hook(kind, value, tb) -> None:
    if issubclass(kind, KeyboardInterrupt):
        print(f"error: {str(value) or 'the build was interrupted'}", file=sys.stderr)
        return
    sys.__excepthook__(kind, value, tb)


@dataclass
class _Guard:
    stage: str
    seconds: float
    active: bool = True
    where_stuck: str = ""
    before: set[int] = field(default_factory=set)
    stopped: set[int] = field(default_factory=set)

    def on_alarm(self, signum, frame) -> None:
        if not self.active:
            return
        if not self.where_stuck:
            self.where_stuck = frame_location(frame)
        self.stopped |= _stop(_descendants(os.getpid()) - self.before, signal.SIGTERM)
        raise _TimedOut

    def on_interrupt(self, signum, frame) -> None:
        if self.active:
            raise _Interrupted

    def hard_stop(self, where: str) -> None:
        """The stage ignored the interruption (a bare ``except:`` in a loop, C code that does
        not return): say so in one line and end the process; a doit worker (``-n``) first
        interrupts doit, which then stops the other workers."""
        if not self.active:
            return
        import multiprocessing

        text = f"error: {where}: {_timeout_message(self, ignored=True)}\n"
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            with contextlib.suppress(Exception):
                stream.flush()
        os.write(2, text.encode())
        _stop(_descendants(os.getpid()) - self.before, signal.SIGKILL)
        if multiprocessing.parent_process() is not None:
            os.kill(os.getppid(), signal.SIGINT)
        os._exit(1)


def call_with_limit(stage: str, where: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` (a stage) under the time limit, with a real Ctrl-C told apart.

    Raises:
        StageError: the stage was still running at the limit (it names the stage, the limit,
            the user's line it was at, and how to raise the limit).
        KeyboardInterrupt: Ctrl-C; the build stops (one line, see ``configure``).
    """
    seconds = limit()
    if (seconds is None or not hasattr(signal, "setitimer")
            or threading.current_thread() is not threading.main_thread()):
        return fn(*args)  # signals reach the main thread only
    guard = _Guard(stage, seconds, before=_descendants(os.getpid()))
    started = time.monotonic()
    old_alarm = signal.signal(signal.SIGALRM, guard.on_alarm)
    # Ctrl-C is only taken over where it would raise KeyboardInterrupt anyway (not where it
    # is ignored, as in a background job).
    take_interrupt = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if take_interrupt:
        signal.signal(signal.SIGINT, guard.on_interrupt)
    outer_timer = signal.setitimer(signal.ITIMER_REAL, seconds, _REPEAT)
    watchdog = threading.Timer(seconds + _HARD_STOP, guard.hard_stop, (where,))
    watchdog.daemon = True
    watchdog.start()
    try:
        try:
            return fn(*args)
        finally:
            guard.active = False  # from here on a late alarm or Ctrl-C does nothing
            watchdog.cancel()
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_alarm)
            if take_interrupt:
                signal.signal(signal.SIGINT, signal.default_int_handler)
            _restore_timer(outer_timer, time.monotonic() - started)
    except _TimedOut:
        _reap(guard.stopped)
        raise StageError(where, _timeout_message(guard)) from None
    except _Interrupted:
        _reap(_stop(_descendants(os.getpid()) - guard.before, signal.SIGTERM))
        raise KeyboardInterrupt(f"{where}: the build was interrupted (Ctrl-C) while the "
                                f"{stage} stage ran") from None


def _restore_timer(outer: tuple[float, float], elapsed: float) -> None:
    """Re-arm a timer someone else had set (a test runner's time-out), less the time spent."""
    delay, interval = outer
    if delay > 0:
        signal.setitimer(signal.ITIMER_REAL, max(delay - elapsed, 0.001), interval)


def _timeout_message(guard: _Guard, ignored: bool = False) -> str:
    at = f" at {guard.where_stuck}" if guard.where_stuck else ""
    ending = (f"{at} {_HARD_STOP:g} s later, ignoring the interruption, and the build was "
              f"ended" if ignored else f"{at} and was stopped")
    return (f"the {guard.stage} stage must finish within the time limit of {guard.seconds:g} s; "
            f"it was still running{ending}. If it only needs longer, raise the limit: "
            f"timeout=SECONDS on the doit command line or {ENV}=SECONDS (0: no limit) "
            f"{see('docs/commands.md#timeout')}")


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (Linux: read from /proc; elsewhere none)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return set()
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        ppid = int(stat.rsplit(b")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(name))
    found: set[int] = set()
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), ()):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def _stop(pids: set[int], sig: int) -> set[int]:
    """Send ``sig`` to each of ``pids``; those that still existed."""
    sent = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)
            sent.add(pid)
    return sent


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def _reap(pids: set[int]) -> None:
    """Give stopped tools ``_GRACE`` seconds to exit (Ninja removes half-written outputs on
    SIGTERM), then SIGKILL what is left."""
    deadline = time.monotonic() + _GRACE
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    _stop({p for p in pids if alive(p)}, signal.SIGKILL)
