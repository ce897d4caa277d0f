"""A live "still running" line for long stages, on a terminal only.

Vela on a big network, a cold runtime build or the CPU verification of a deep model take
from seconds to minutes; on a terminal the stage's line then shows the time it has run so
far, rewritten in place each second, and is cleared when the stage ends (its own ``built in``
line follows). Piped or in CI logs (stdout not a terminal) nothing is printed: logs stay one
line per task.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

DELAY = 2.0  # a stage shorter than this shows nothing
EVERY = 1.0


@contextlib.contextmanager
def ticking(label: str, stream: TextIO | None = None, *, delay: float = DELAY,
            every: float = EVERY) -> Iterator[None]:
    """While the block runs, after ``delay`` seconds, rewrite ``"   <label>: running Ns"``
    on ``stream`` (the process's terminal by default) every ``every`` seconds."""
    stream = stream if stream is not None else sys.__stdout__
    if stream is None or not _is_terminal(stream):
        yield
        return
    done = threading.Event()
    started = time.monotonic()
    shown = False

    def tick() -> None:
        nonlocal shown
        if done.wait(delay):
            return
        while True:
            stream.write(f"\r   {label}: running {time.monotonic() - started:.0f}s\033[K")
            stream.flush()
            shown = True
            if done.wait(every):
                return

    thread = threading.Thread(target=tick, name=f"progress {label}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        if shown:
            stream.write("\r\033[K")  # the stage's own line replaces the ticker
            stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or not a file
        return False
