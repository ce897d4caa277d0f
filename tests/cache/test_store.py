import json
import os
import subprocess
import sys
from pathlib import Path

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


def _entry(tmp_path, content=b"\x01\x02\x03", name="model.bin"):
    store = Store(tmp_path / "store")
    src = tmp_path / name
    src.write_bytes(content)
    key = "ab" + "4" * 62
    store.put(key, {"stage": "package"}, {name: src})
    return store, key


@pytest.mark.parametrize("damage", ["flip", "truncate", "grow"])
def test_damaged_output_is_quarantined_never_restored(tmp_path, capsys, damage):
    """A flipped byte, a truncation or extra bytes in a stored file: restore refuses the entry,
    moves it to quarantine/ with one line on stderr, and leaves the destination untouched."""
    store, key = _entry(tmp_path)
    stored = store.entry(key) / "model.bin"
    data = stored.read_bytes()
    stored.write_bytes({"flip": bytes([data[0] ^ 1]) + data[1:], "truncate": data[:-1],
                        "grow": data + b"\0"}[damage])
    dest = tmp_path / "out" / "model.bin"
    assert store.has(key)  # the files are all there: only their content is wrong
    assert store.restore(key, {"model.bin": dest}) is False
    assert not dest.exists()
    assert not store.entry(key).exists()
    assert len(list((store.root / "quarantine").iterdir())) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model.bin does not match its checksum" in err[0]


@pytest.mark.parametrize("manifest", ["", "{", '{"outputs": 3}', "\xff\xfe", '{"no": 1}',
                                      '{"outputs": {"../x": "0"}}'])
def test_unreadable_manifest_is_a_miss_not_a_traceback(tmp_path, capsys, manifest):
    store, key = _entry(tmp_path)
    (store.entry(key) / "manifest.json").write_bytes(manifest.encode("latin-1"))
    assert store.has(key) is False
    assert not store.entry(key).exists()
    assert "manifest.json" in capsys.readouterr().err


def test_missing_output_is_quarantined(tmp_path):
    store, key = _entry(tmp_path)
    (store.entry(key) / "model.bin").unlink()
    assert store.has(key) is False
    assert (store.root / "quarantine").is_dir()


def test_restore_checks_and_stamps_last_use(tmp_path):
    import os

    store, key = _entry(tmp_path)
    os.utime(store.entry(key), (1, 1))
    assert store.restore(key, {"model.bin": tmp_path / "o" / "m.bin"}) is True
    assert (tmp_path / "o" / "m.bin").read_bytes() == b"\x01\x02\x03"
    assert store.entry(key).stat().st_mtime > 1


KILLED_WRITER = """
import shutil, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from pipeline.cache.store import Store
real_copy = shutil.copy
def slow_copy(src, dst):
    real_copy(src, dst)
    print("staging", flush=True)
    time.sleep(60)
shutil.copy = slow_copy
Store(Path(sys.argv[2])).put("ab" + "0" * 62, {}, {"a.bin": Path(sys.argv[3])})
"""


def test_staging_of_a_killed_writer_is_swept_by_the_next_put(tmp_path):
    """A writer killed (-9) in the middle of a put leaves its staging folder; the next put in
    that shard removes it, while a live writer's and another host's recent ones stay."""
    root = Path(__file__).resolve().parents[2]
    src = tmp_path / "a.bin"
    src.write_bytes(b"x" * 1000)
    store = Store(tmp_path / "store")
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(root), str(store.root),
                               str(src)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "staging"
    writer.kill()
    writer.wait()
    shard = store.root / "ab"
    [left] = [p.name for p in shard.iterdir()]
    assert left.startswith(".ab0000000000-") and f"-{writer.pid}-" in left
    live = shard / f".ab1111111111-{left.split('-')[1]}-{os.getpid()}-x"
    other_host = shard / ".ab2222222222-elsewhere-1-x"
    live.mkdir()
    other_host.mkdir()
    store.put("ab" + "3" * 62, {}, {"a.bin": src})
    names = {p.name for p in shard.iterdir()}
    assert left not in names
    assert {live.name, other_host.name, "ab" + "3" * 62} == names
