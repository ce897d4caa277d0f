"""Run checks side by side: the run checks of a build (``vgf_check``) on every core at once.

A VGF run check is single-threaded, nearly all of it the ML emulation layer building a compute
pipeline per operator, and a serial build (doit's default) runs the checks one after another
with the other cores idle. So a check's task in a serial build runs every ready, pending check
of the build - its own and its peers' (the same stage's invocations that the selected targets
need) whose inputs are there and whose entries the store lacks - from one queue: this process
takes checks one after another, and a ``python -m pipeline.graph.alongside_worker`` worker per further
core takes the others (``alongside_worker.py``). Each check is ``run_stage`` itself (the same key, time limit, store entry
and remote upload as its task would make), so a peer's own task then finds the entry and
restores it. A check that fails stores nothing: its own task runs it again and reports the
failure as usual. A peer is considered until it ran side by side or was found stored, so the
checks of a target whose graphs are built later join a later task's queue.

Not under ``doit -n``/``-P`` (doit runs tasks side by side there already), nor with
``ETHOSU_PIPELINE_CHECK_JOBS=1``; that variable caps the processes (default: the cores).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

from pipeline.errors import UserError
from pipeline.graph.plan import REPO_DIR, Invocation

_seen: set[str] = set()  # the tasks this process ran side by side or found stored


JOBS_ENV = "ETHOSU_PIPELINE_CHECK_JOBS"


def jobs_allowed() -> int:
    """How many checks may run at once: ``$ETHOSU_PIPELINE_CHECK_JOBS``, else the cores this
    process may use.

    Raises:
        UserError: the variable is set but not a whole number >= 1.
    """
    raw = os.environ.get(JOBS_ENV, "").strip()
    if raw:
        if not (raw.isdigit() and int(raw) >= 1):
            raise UserError(f"{JOBS_ENV} must be a whole number >= 1 (the run checks a serial "
                            f"build runs at once; 1: one at a time); got {raw!r}")
        return int(raw)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def in_doit_worker() -> bool:
    """True inside a doit ``-n`` worker process or ``-P thread`` thread."""
    return (multiprocessing.parent_process() is not None
            or threading.current_thread() is not threading.main_thread())


def run_alongside(inv: Invocation, peers: list[tuple[Invocation, str]], store_root: str,
                  remote_config=None, *, pending, run) -> None:
    """In a serial build: run ``inv`` and those of its ``peers`` that are ready (their inputs
    are there) and pending side by side. Each peer is considered until it ran here or was
    found stored, so a check whose inputs are made later (another target's) joins the side
    by side of a later task.

    This process runs them one after another (it has imported everything already), and one
    worker process per further core takes from the same queue.

    Args:
        inv: the invocation whose task is running now (among ``peers``).
        peers: (invocation, where) of every task of the stage in the build.
        pending: ``(inv) -> bool``, whether the store lacks the invocation's entry.
        run: ``actions.run_stage``, which runs one (this process's share of the queue).
    """
    if in_doit_worker() or jobs_allowed() < 2:
        return
    todo = []
    for peer, where in peers:
        if peer.task in _seen or not all(Path(f).is_file() for f in peer.inputs.values()):
            continue
        if pending(peer):
            todo.append((peer, where))
        else:
            _seen.add(peer.task)
    jobs = min(jobs_allowed(), len(todo))
    if jobs < 2:
        return
    _seen.update(peer.task for peer, _ in todo)
    print(f"   {inv.stage}: {len(todo)} of this build's {len(peers)} side by side, {jobs} at a "
          f"time", flush=True)
    started = time.perf_counter()
    from pipeline.graph import timeout

    queue = list(todo)
    lock = threading.Lock()

    def take():
        with lock:
            return queue.pop(0) if queue else None

    workers = [_Worker(store_root, remote_config, timeout.limit(), lock, take)
               for _ in range(jobs - 1)]
    try:
        while (job := take()) is not None:
            try:
                run(job[0], store_root, job[1], remote_config)
            except Exception:  # noqa: BLE001 - the peer's own task runs it again and reports
                pass
        for worker in workers:
            worker.thread.join()
    finally:
        for worker in workers:
            worker.stop()
    print(f"   {inv.stage}: {len(todo)} side by side in {time.perf_counter() - started:.1f}s "
          f"wall", flush=True)


DONE = "\x00alongside done"


class _Worker:
    """A ``python -m pipeline.graph.alongside_worker`` process fed invocations by a thread."""

    def __init__(self, store_root: str, remote_config, seconds, lock, take):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_DIR),
                                                          env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "pipeline.graph.alongside_worker", str(seconds or 0)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.store_root, self.remote_config, self.lock, self.take = \
            store_root, remote_config, lock, take
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.thread.start()

    def _feed(self) -> None:
        while (job := self.take()) is not None:
            data = pickle.dumps((job[0], self.store_root, job[1], self.remote_config))
            try:
                self.proc.stdin.write(len(data).to_bytes(8, "little") + data)
                self.proc.stdin.flush()
            except OSError:
                return  # the worker died: its tasks run the rest
            last = ""
            for raw in self.proc.stdout:
                line = raw.decode(errors="replace").rstrip("\n")
                if line.startswith(DONE):
                    break
                last = line or last
            else:
                return  # the worker died mid-job
            if line == f"{DONE} 0" and last:
                with self.lock:
                    print(last, flush=True)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
