import json

import pytest

from pipeline.cache.store import Store, copy_atomic


def test_put_then_restore_round_trips(tmp_path):
    store = Store(tmp_path / "store")
    src = tmp_path / "model.bin"
    src.write_bytes(b"\x01\x02")
    key = "ab" + "0" * 62
    assert not store.has(key)
    entry = store.put(key, {"stage": "package"}, {"model.bin": src})
    assert entry == tmp_path / "store" / "ab" / key
    assert store.has(key)
    manifest = store.manifest(key)
    assert manifest["record"] == {"stage": "package"}
    assert set(manifest["outputs"]) == {"model.bin"}
    dest = tmp_path / "out" / "model.bin"
    store.restore(key, {"model.bin": dest})
    assert dest.read_bytes() == b"\x01\x02"


def test_put_leaves_no_temporary_folder(tmp_path):
    store = Store(tmp_path)
    src = tmp_path / "f"
    src.write_text("x")
    store.put("cd" + "1" * 62, {}, {"f": src})
    assert [p.name for p in (tmp_path / "cd").iterdir()] == ["cd" + "1" * 62]


def test_entry_with_missing_output_is_not_a_hit(tmp_path):
    store = Store(tmp_path)
    src = tmp_path / "f"
    src.write_text("x")
    key = "ef" + "2" * 62
    store.put(key, {}, {"f": src})
    (store.entry(key) / "f").unlink()
    assert not store.has(key)


def test_failed_put_keeps_store_clean(tmp_path):
    store = Store(tmp_path / "s")
    with pytest.raises(FileNotFoundError):
        store.put("aa" + "3" * 62, {}, {"f": tmp_path / "does-not-exist"})
    assert list((tmp_path / "s" / "aa").iterdir()) == []


def test_second_put_of_same_key_keeps_first_entry(tmp_path):
    store = Store(tmp_path / "s")
    src = tmp_path / "f"
    src.write_text("x")
    key = "bb" + "4" * 62
    store.put(key, {"n": 1}, {"f": src})
    store.put(key, {"n": 2}, {"f": src})
    assert json.loads((store.entry(key) / "manifest.json").read_text())["record"] == {"n": 1}


def test_copy_atomic_replaces_destination(tmp_path):
    src, dest = tmp_path / "a", tmp_path / "sub" / "b"
    src.write_text("new")
    dest.parent.mkdir()
    dest.write_text("old")
    copy_atomic(src, dest)
    assert dest.read_text() == "new"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["b"]
