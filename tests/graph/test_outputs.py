"""The uptodate check that notices output files changed outside the build."""

import os
from types import SimpleNamespace

from pipeline.graph.outputs import outputs_unchanged, record


def _task(tmp_path, *contents: bytes):
    paths = []
    for i, content in enumerate(contents):
        path = tmp_path / f"out{i}.bin"
        path.write_bytes(content)
        paths.append(path)
    return SimpleNamespace(name="lower:m", targets=[str(p) for p in paths]), paths


def test_untouched_outputs_are_up_to_date(tmp_path):
    task, paths = _task(tmp_path, b"abc", b"defg")
    assert outputs_unchanged(task, record(paths))


def test_a_touch_alone_is_not_a_change(tmp_path, capsys):
    task, paths = _task(tmp_path, b"abc")
    values = record(paths)
    os.utime(paths[0], ns=(1, 1))
    assert outputs_unchanged(task, values)
    assert capsys.readouterr().err == ""


def test_same_size_other_bytes_is_a_change_named_in_one_line(tmp_path, capsys):
    task, paths = _task(tmp_path, b"abc", b"defg")
    values = record(paths)
    paths[1].write_bytes(b"defh")
    assert not outputs_unchanged(task, values)
    assert capsys.readouterr().err.strip() == (
        f"lower:m: {paths[1]} was changed outside the build; rewriting it")


def test_truncation_and_removal_are_changes(tmp_path):
    task, paths = _task(tmp_path, b"abcdef")
    values = record(paths)
    paths[0].write_bytes(b"abc")
    assert not outputs_unchanged(task, values)
    paths[0].unlink()
    assert not outputs_unchanged(task, values)


def test_no_record_means_run(tmp_path):
    task, _ = _task(tmp_path, b"abc")
    assert not outputs_unchanged(task, {})
    assert not outputs_unchanged(task, {"outputs": {}})
