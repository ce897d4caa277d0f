"""A doit worker (``doit -n N``) that dies inside a stage ends the build, named.

doit's process pool waits for a result of every task it hands out. A worker that ends in the
middle of a stage without sending one (killed by SIGKILL or the kernel's OOM killer, a crash
in C code, an exit no Python code sees) would leave the build waiting for ever. So each stage
a worker runs leaves a marker, ``<build>/.work/running/<pid>`` (its ``target/stage`` and
stage), while it runs, and a thread of doit's main process looks at the markers twice a
second: a marker whose process has ended is a stage that ended without reporting. The thread
prints one line naming it and how its process ended, stops the other workers and ends the
build (exit status 1). A serial build runs its stages in doit's own process: there the
process's own exit status is the report (137 for SIGKILL).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from pathlib import Path

from pipeline.graph.timeout import alive

RUNNING = "running"  # under <build>/.work/
_INTERVAL = 0.5
_watching: set[str] = set()


@contextlib.contextmanager
def stage_marked(work: Path, where: str, stage: str):
    """Within the block, a doit worker process is marked as running ``stage`` (nothing in
    doit's main process or a serial build)."""
    if multiprocessing.parent_process() is None:
        yield
        return
    marker = Path(work) / RUNNING / str(os.getpid())
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"{where}\n{stage}\n")
    try:
        yield
    finally:
        marker.unlink(missing_ok=True)


def watch(work: Path) -> None:
    """Watch the workers' markers under ``work`` from this (doit's main) process."""
    folder = Path(work) / RUNNING
    if str(folder) in _watching:
        return
    _watching.add(str(folder))
    threading.Thread(target=_watch, args=(folder,), name="stage-workers", daemon=True).start()


def _watch(folder: Path) -> None:
    while True:
        time.sleep(_INTERVAL)
        dead = died(folder)
        if dead is not None:
            _end_build(*dead)


def died(folder: Path) -> tuple[str, str, str] | None:
    """(where, stage, how it ended) of a marked stage whose process has ended, or None."""
    try:
        markers = list(folder.iterdir())
    except OSError:
        return None
    for marker in markers:
        if not marker.name.isdigit() or alive(int(marker.name)):
            continue
        try:
            where, stage = marker.read_text().splitlines()[:2]
        except (OSError, ValueError):
            continue  # removed meanwhile: the stage ended normally
        if not marker.exists():
            continue
        return where, stage, _how(int(marker.name))
    return None


def _how(pid: int) -> str:
    """How worker ``pid`` ended: its signal or exit status (reaped here when it is ours)."""
    for proc in list(_children()):
        if proc.pid == pid and proc.exitcode is not None:
            code = proc.exitcode
            if code < 0:
                with contextlib.suppress(ValueError):
                    return f"killed by {signal.Signals(-code).name}"
                return f"killed by signal {-code}"
            return f"exit status {code}"
    return "it ended"


def _children():
    # multiprocessing's own registry of this process's children (doit's workers), which
    # still holds a child that has ended until someone asks for the active ones
    return getattr(multiprocessing.process, "_children", set())


def _end_build(where: str, stage: str, how: str) -> None:
    text = (f"error: {where}: the {stage} stage's process ended without reporting ({how}); "
            "the build was stopped. Killed from outside (the OOM killer?) or a crash in native "
            "code: run the build again without -n to see the stage's own output\n")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os.write(2, text.encode())
    for proc in list(multiprocessing.active_children()):
        with contextlib.suppress(Exception):
            proc.kill()
    os._exit(1)
