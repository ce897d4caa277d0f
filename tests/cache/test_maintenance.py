"""``python -m pipeline.cache verify|gc``: checking and trimming the store."""

import os
import time

import pytest

from pipeline.cache.__main__ import main
from pipeline.cache.maintenance import entries, gc_store, parse_age, parse_size, sweep_leftovers
from pipeline.cache.store import Store


def _fill(tmp_path, count=4, size=1000):
    store = Store(tmp_path / "store")
    keys = []
    for i in range(count):
        src = tmp_path / f"f{i}"
        src.write_bytes(bytes([i]) * size)
        key = f"{i:02x}" + "a" * 62
        store.put(key, {}, {"out.bin": src})
        os.utime(store.entry(key), (1000 + i, 1000 + i))  # last use: key 0 oldest
        keys.append(key)
    return store, keys


def test_verify_quarantines_only_damaged_entries(tmp_path, capsys):
    store, keys = _fill(tmp_path)
    (store.entry(keys[2]) / "out.bin").write_bytes(b"tampered")
    assert main(["--store", str(store.root), "verify"]) == 1
    out = capsys.readouterr().out
    assert "4 entries" in out and "1 damaged" in out
    assert [store.has(k) for k in keys] == [True, True, False, True]
    assert main(["--store", str(store.root), "verify"]) == 0


def test_gc_to_a_size_budget_removes_least_recently_used_first(tmp_path):
    store, keys = _fill(tmp_path)
    size = entries(store)[0].size  # output + manifest
    removed, kept = gc_store(store, max_size=2 * size + size // 2)
    assert [e.key for e in removed] == keys[:2]
    assert kept == 2 * size and store.has(keys[2]) and store.has(keys[3])


def test_gc_by_age(tmp_path):
    store, keys = _fill(tmp_path)
    os.utime(store.entry(keys[3]), None)  # used just now
    removed, _ = gc_store(store, older_than=parse_age("30d"))
    assert sorted(e.key for e in removed) == keys[:3]
    assert store.has(keys[3])


def test_gc_dry_run_removes_nothing(tmp_path, capsys):
    store, keys = _fill(tmp_path)
    assert main(["--store", str(store.root), "gc", "--max-size", "3K", "--dry-run"]) == 0
    assert "would remove 2 entries" in capsys.readouterr().out
    assert all(store.has(k) for k in keys)


def test_gc_sweeps_stale_staging_folders_of_killed_writers(tmp_path):
    store, keys = _fill(tmp_path, count=1)
    stale = store.root / keys[0][:2] / f".{keys[0][:12]}-dead"
    fresh = store.root / keys[0][:2] / f".{keys[0][:12]}-live"
    stale.mkdir(), fresh.mkdir()
    os.utime(stale, (1, 1))
    assert sweep_leftovers(store, now=time.time()) == 1
    assert not stale.exists() and fresh.exists() and store.has(keys[0])


@pytest.mark.parametrize("argv, message", [
    (["gc"], "--max-size or --older-than must be given"),
    (["gc", "--max-size", "lots"], "--max-size must be a number"),
    (["gc", "--older-than", "3 days"], "--older-than must be a number"),
])
def test_bad_usage_is_one_clear_line(tmp_path, capsys, argv, message):
    _fill(tmp_path, count=1)
    assert main(["--store", str(tmp_path / "store"), *argv]) == 2
    assert message in capsys.readouterr().err


def test_sizes_and_ages_parse():
    assert parse_size("2G") == 2 << 30 and parse_size("500M") == 500 << 20
    assert parse_size("10KiB") == 10 << 10 and parse_size("123") == 123
    assert parse_age("12h") == 43200 and parse_age("2w") == 14 * 86400
