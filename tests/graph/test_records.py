"""doit's records: a damaged database is detected, moved aside and replaced."""

import json
import sqlite3

import pytest

from pipeline.graph.records import damage, repair


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
