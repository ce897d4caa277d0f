"""Stats kept while doit checks tasks (graph/stats.py): a file a task rewrote is seen anew."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pipeline.graph import stats

REPO = Path(__file__).resolve().parents[2]

DODO = textwrap.dedent('''
    from pathlib import Path
    from pipeline.graph.stats import MD5Checker

    DOIT_CONFIG = {"check_file_uptodate": MD5Checker, "backend": "sqlite3",
                   "dep_file": ".doit.db", "verbosity": 2}

    def copy(src, dst):
        Path(dst).write_text(Path(src).read_text() + "+")

    def task_a():  # src -> mid
        return {"actions": [(copy, ["src", "mid"])], "file_dep": ["src"], "targets": ["mid"]}

    def task_b():  # mid -> out: checked after a ran, which stat'ed mid (its target) before
        return {"actions": [(copy, ["mid", "out"])], "file_dep": ["mid"], "targets": ["out"]}
''')


def _doit(folder: Path, *args: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "doit", *args], cwd=folder, text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                          check=True)
    return [line[3:] for line in proc.stdout.splitlines() if line.startswith(".  ")]


def test_kept_stat_is_forgotten_once_a_task_ran(tmp_path):
    path = tmp_path / "f"
    path.write_text("one")
    checker = stats.MD5Checker()
    first = checker.info(str(path))
    path.write_text("three")
    assert checker.info(str(path)) is first  # kept while no task ran
    checker.get_state(str(path), None)  # what doit asks after a task succeeded
    assert checker.info(str(path)).st_size == 5
    assert not checker.exists(str(tmp_path / "absent"))


@pytest.mark.parametrize("jobs", [[], ["-n", "2"]])
def test_a_file_rewritten_during_the_build_is_seen_by_its_readers(tmp_path, jobs):
    """Real doit: b's file_dep ``mid`` was stat'ed (a's check of its target) before a
    rewrote it; b must still see the new ``mid``."""
    (tmp_path / "dodo.py").write_text(DODO)
    (tmp_path / "src").write_text("x")
    assert sorted(_doit(tmp_path, *jobs, "a", "b")) == ["a", "b"]
    assert _doit(tmp_path, *jobs, "a", "b") == []
    (tmp_path / "src").write_text("yy")
    os.utime(tmp_path / "src", ns=(1, 1))  # a new mtime whatever the clock's resolution
    assert sorted(_doit(tmp_path, *jobs, "a", "b")) == ["a", "b"]
    assert (tmp_path / "out").read_text() == "yy++"
    assert _doit(tmp_path, *jobs, "a", "b") == []


def test_uptodate_checks_give_doit_their_real_signature():
    """doit passes ``task`` and ``values`` by the names inspect.signature() reports."""
    import inspect

    from doit.tools import config_changed

    from pipeline.graph.outputs import loaded_unchanged, outputs_unchanged
    from pipeline.graph.tasks import ConfigChanged

    assert list(inspect.signature(ConfigChanged({"a": 1})).parameters) == list(
        inspect.signature(config_changed({"a": 1})).parameters) == ["task", "values"]
    for check in (outputs_unchanged, loaded_unchanged):
        assert list(inspect.signature(check).parameters) == ["task", "values"]


def _fresh_build_process(build: Path) -> None:
    """What a new doit process starts with: nothing kept, the digests read from ``build``."""
    stats.forget()
    stats._used.clear()
    stats._hashed.clear()
    stats.keep_digests_in(build)


def test_a_touched_file_dep_is_hashed_once_not_on_every_build(tmp_path, monkeypatch):
    """Stand-in (a counting ``get_file_md5``) only to count the hashes doit's checker makes."""
    hashed = []
    real = stats.dependency.get_file_md5
    monkeypatch.setattr(stats.dependency, "get_file_md5", lambda p: hashed.append(p) or real(p))
    monkeypatch.setattr(stats.atexit, "register", lambda f: None)
    path = tmp_path / "dep"
    path.write_bytes(b"same bytes")
    checker = stats.MD5Checker()
    _fresh_build_process(tmp_path)
    state = checker.get_state(str(path), None)  # saved by the task's last run
    os.utime(path, ns=(10**18, 10**18))  # a touch: the time moved, the bytes did not
    assert not checker.check_modified(str(path), checker.info(str(path)), state)
    assert len(hashed) == 2  # get_state's hash, then the touched file's
    stats._save()
    for _ in range(3):  # later no-op builds: the digest is read back, the file not hashed
        _fresh_build_process(tmp_path)
        assert not checker.check_modified(str(path), checker.info(str(path)), state)
    assert len(hashed) == 2
    before = path.stat()
    path.write_bytes(b"SAME BYTES")  # same size, time set back: the change time still moved
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    _fresh_build_process(tmp_path)
    assert checker.check_modified(str(path), checker.info(str(path)), state)
    assert len(hashed) == 3


def test_an_unreadable_digest_file_means_hashing_again(tmp_path):
    path = tmp_path / "dep"
    path.write_bytes(b"x")
    (tmp_path / stats.DIGEST_FILE).write_text("[[1, 2")
    _fresh_build_process(tmp_path)
    checker = stats.MD5Checker()
    assert stats.digest(str(path), checker.info(str(path))) == \
        stats.dependency.get_file_md5(str(path))
