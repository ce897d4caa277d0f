"""Vela's command line, run without paying for Python and Vela's imports on every compile.

Starting ``vela`` costs about 0.35 s of CPU before it reads the network (the interpreter and
Vela's imports), more than compiling a small network takes, and the search compiles each
network twice or more. So the first compile of a process starts a server: a Python process
that imports Vela once, then forks a child per compile. Each compile still runs in a fresh
process, with Vela's state as after import, its own exit status, and its stdout and stderr in
files: the same outputs, byte for byte, as the ``vela`` executable
(``tests/stages/test_vela.py``). The server belongs to the process that started it (a forked
copy of that process starts its own) and ends with it. Where this interpreter cannot import
Vela, or the server is gone or cannot start, the ``vela`` executable runs instead.

The stage time limit (``pipeline/graph/timeout.py``) stops the server and its compile with
the stage's other descendants; the next compile starts a new server.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

_lock = threading.Lock()
_server: tuple[int, subprocess.Popen] | None = None  # (pid of the owner, the server)


def vela_command() -> list[str]:
    """Vela's entry point in the running interpreter's environment."""
    exe = Path(sys.executable).with_name("vela")
    return [str(exe)] if exe.exists() else [shutil.which("vela") or "vela"]


def run_vela_command(argv: Sequence[str]) -> tuple[int, str, str]:
    """Run ``vela argv``: (exit status, stdout, stderr); a negative status is the signal
    that ended the compile."""
    with tempfile.TemporaryDirectory(prefix="vela-io-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        status = _served(list(argv), out, err)
        if status is not None:
            return status, _text(out), _text(err)
    proc = subprocess.run([*vela_command(), *argv], capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def _served(argv: list[str], out: Path, err: Path) -> int | None:
    """The exit status of the compile run by this process's server; None: no server."""
    global _server
    with _lock:
        server = _running()
        if server is None:
            return None
        request = json.dumps({"argv": argv, "stdout": str(out), "stderr": str(err)})
        try:
            server.stdin.write(request + "\n")
            server.stdin.flush()
            answer = server.stdout.readline()
            return int(json.loads(answer)["status"])
        except (OSError, ValueError, KeyError, TypeError):
            _stop(server)  # gone or confused: the executable runs this and later compiles
            _server = (os.getpid(), None)
            return None
        except BaseException:
            _stop(server)  # interrupted mid-compile: the answer would be read by the next one
            _server = None
            raise


def _running() -> subprocess.Popen | None:
    global _server
    if (_server is not None and _server[0] == os.getpid()
            and (_server[1] is None or _server[1].poll() is None)):
        return _server[1]
    _server = (os.getpid(), None)  # not started, stopped, or inherited from the parent
    if importlib.util.find_spec("ethosu.vela") is None or not hasattr(os, "fork"):
        return None
    try:
        # -P: this file runs as a script, without its folder first on sys.path
        server = subprocess.Popen([sys.executable, "-P", __file__], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None
    _server = (os.getpid(), server)
    return server


def _stop(server: subprocess.Popen) -> None:
    with contextlib.suppress(OSError):
        server.kill()
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        server.wait(timeout=5)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def serve() -> None:
    """The server: import Vela, then per request line ``{"argv", "stdout", "stderr"}`` fork a
    compile and answer ``{"status": N}``; ends when its input closes."""
    import ethosu.vela.vela  # noqa: F401  (the point: imported once, before any fork)

    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _compile(request["argv"], request["stdout"], request["stderr"])
        _, wait_status = os.waitpid(pid, 0)
        sys.stdout.write(json.dumps({"status": os.waitstatus_to_exitcode(wait_status)}) + "\n")
        sys.stdout.flush()


def _compile(argv: list[str], stdout: str, stderr: str) -> None:
    """In the forked child: Vela's ``main`` with stdout and stderr sent to files (at the
    descriptor level, so nothing Vela or a library prints reaches the server's pipe)."""
    status = 1
    try:
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        for fd, path in ((1, stdout), (2, stderr)):
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(handle, fd)
            os.close(handle)
        from ethosu.vela.vela import main

        sys.argv = ["vela", *argv]
        status = main(argv) or 0
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, int | None):
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001  (Vela's own crash: its traceback, as the executable)
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(status)


if __name__ == "__main__":
    serve()
