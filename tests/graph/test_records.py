"""doit's records: a damaged database is detected, moved aside and replaced."""

import json
import os
import sqlite3
from pathlib import Path

import pytest

from pipeline.graph import records
from pipeline.graph.records import STAMP_SUFFIX, damage, repair


def _healthy(path, rows=50):
    connection = sqlite3.connect(path)
    connection.execute("create table doit (task_id text not null primary key, task_data json)")
    for i in range(rows):
        connection.execute("insert into doit values (?, ?)",
                           (f"export:m{i}", json.dumps({"deps:": ["x" * 200], "i": i})))
    connection.commit()
    connection.close()
    return path


def test_a_healthy_or_missing_database_is_fine(tmp_path):
    assert damage(tmp_path / "absent.db") is None
    assert damage(_healthy(tmp_path / "ok.db")) is None
    assert repair(tmp_path / "ok.db") is None and (tmp_path / "ok.db").is_file()


def _garbage(path):
    path.write_bytes(b"garbage")


def _truncated(path):
    path.write_bytes(path.read_bytes()[:5000])


def _torn_page(path):
    data = bytearray(path.read_bytes())
    data[4096 + 10: 4096 + 200] = b"\xff" * 190  # the b-tree header of the second page
    path.write_bytes(bytes(data))


def _bad_record(path):
    connection = sqlite3.connect(path)
    connection.execute("update doit set task_data = '{\"deps:\": [' where task_id = 'export:m3'")
    connection.commit()
    connection.close()


@pytest.mark.parametrize("damage_it", [_garbage, _truncated, _torn_page, _bad_record])
def test_damage_is_detected_and_moved_aside(tmp_path, capsys, damage_it):
    path = _healthy(tmp_path / ".doit.db")
    damage_it(path)
    assert damage(path) is not None
    moved = repair(path)
    assert moved is not None and moved.is_file() and not path.exists()
    err = capsys.readouterr().err
    assert err.startswith(f"warning: doit's records {path} are damaged (")
    assert err.count("\n") == 1


def _same_size_same_time(path):
    """A torn page written back with the file's size and modification time restored."""
    before = path.stat()
    _torn_page(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


@pytest.mark.parametrize("damage_it", [_garbage, _truncated, _torn_page, _bad_record,
                                       _same_size_same_time])
def test_damage_after_a_passed_check_is_still_seen(tmp_path, capsys, damage_it):
    """The stamp of a passed check spares the next build the decode, never the detection."""
    path = _healthy(tmp_path / ".doit.db")
    assert repair(path) is None
    assert (tmp_path / f".doit.db{STAMP_SUFFIX}").is_file()
    damage_it(path)
    moved = repair(path)
    assert moved is not None and not path.exists()
    assert not (tmp_path / f".doit.db{STAMP_SUFFIX}").exists()
    assert "are damaged (" in capsys.readouterr().err


def test_an_unchanged_checked_database_is_not_decoded_again(tmp_path, monkeypatch):
    """Stand-in (monkeypatched ``damage``) only to count the full checks that run."""
    path = _healthy(tmp_path / ".doit.db")
    calls = []
    real = records.damage
    monkeypatch.setattr(records, "damage", lambda p: calls.append(p) or real(p))
    assert repair(path) is None and repair(path) is None
    assert len(calls) == 1
    connection = sqlite3.connect(path)  # doit writing its records: checked again
    connection.execute("insert into doit values ('lower:m', '{}')")
    connection.commit()
    connection.close()
    assert repair(path) is None and repair(path) is None
    assert len(calls) == 2
    Path(f"{path}-journal").write_bytes(b"")  # a side file appearing: checked again
    assert repair(path) is None
    assert len(calls) == 3
    Path(f"{path}{STAMP_SUFFIX}").write_text("not json")  # a damaged stamp: checked again
    assert repair(path) is None
    assert len(calls) == 4


def test_what_a_build_writes_is_stamped_when_it_ends_and_damage_after_is_seen(tmp_path,
                                                                              monkeypatch):
    """A build process checks the records, writes them as doit does, and exits: the next
    build does not decode them again, but still sees damage done after it ended."""
    import subprocess
    import sys

    path = _healthy(tmp_path / ".doit.db")
    build = (f"import sqlite3; from pathlib import Path; from pipeline.graph.records import "
             f"repair; assert repair(Path({str(path)!r})) is None; "
             f"c = sqlite3.connect({str(path)!r}); "
             "c.execute(\"insert or replace into doit values ('build', '{}')\"); c.commit()")
    subprocess.run([sys.executable, "-c", build], check=True,
                   env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    calls = []
    real = records.damage
    monkeypatch.setattr(records, "damage", lambda p: calls.append(p) or real(p))
    assert repair(path) is None and calls == []
    _torn_page(path)
    assert repair(path) is not None and len(calls) == 1
