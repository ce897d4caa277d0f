"""One build at a time per build folder: the second waits, saying so."""

import subprocess
import sys
import time
from pathlib import Path

from pipeline.graph.lock import lock_build_folder, needs_lock

ROOT = Path(__file__).resolve().parents[2]
HOLD = """
import sys, time
sys.path.insert(0, {root!r})
from pipeline.graph.lock import lock_build_folder
lock_build_folder(__import__("pathlib").Path({build!r}))
print("held", flush=True)
time.sleep({seconds})
"""


def test_second_build_waits_for_the_first(tmp_path, capsys):
    holder = subprocess.Popen([sys.executable, "-c", HOLD.format(root=str(ROOT), build=str(tmp_path),
                                                                 seconds=1.5)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    started = time.monotonic()
    lock_build_folder(tmp_path)
    waited = time.monotonic() - started
    assert holder.wait(timeout=10) == 0
    assert waited > 0.5
    err = capsys.readouterr().err
    assert f"waiting for the build running in {tmp_path} (pid {holder.pid}) to finish" in err
    assert (tmp_path / ".lock").read_text() == str(__import__("os").getpid())


def test_a_killed_build_leaves_no_lock(tmp_path, capsys):
    holder = subprocess.Popen([sys.executable, "-c", HOLD.format(root=str(ROOT), build=str(tmp_path),
                                                                 seconds=60)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait()
    lock_build_folder(tmp_path)
    assert "waiting" not in capsys.readouterr().err


def test_read_only_commands_take_no_lock():
    assert needs_lock(["doit"]) and needs_lock(["doit", "build", "target=a"])
    assert needs_lock(["doit", "clean"]) and needs_lock(["doit", "-n", "2", "build"])
    assert not needs_lock(["doit", "list", "--all"]) and not needs_lock(["doit", "info", "x"])


def test_sweep_removes_work_areas_and_legacy_leftovers(tmp_path):
    from pipeline.graph.lock import sweep_work

    legacy = tmp_path / ".stages" / "export" / "m" / ".work-abc"
    legacy.mkdir(parents=True)
    (legacy / "model.pt2").write_bytes(b"half")
    keep = tmp_path / ".stages" / "export" / "m" / "model.pt2"
    keep.write_bytes(b"done")
    assert sweep_work(tmp_path) == 1  # the first build of this version: legacy folders
    assert not legacy.exists() and keep.is_file()
    (tmp_path / ".work" / "vela-123" / "vela-tmp").mkdir(parents=True)
    (tmp_path / ".work" / "stray").write_text("x")
    assert sweep_work(tmp_path) == 2
    assert list((tmp_path / ".work").iterdir()) == [] and keep.is_file()
