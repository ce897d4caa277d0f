"""``pipeline/files.py`` and every place the build writes, renames or deletes through it:
a symbolic link planted in the build folder or the store (a CI cache restored from a
tarball, a mistaken ``ln -s``) is never followed: one clear error names it, and ``clean`` /
``gc`` remove the link, never its target (issue 28, reproductions 1-5 and the other paths).
A full disk is one line naming the folder and the space needed (reproduction 10), tested on
a real 8 MiB tmpfs.

Each test plants its link towards a canary folder (or file) outside the build folder and the
store, hashed before and after: names, contents, modes and times of everything in it.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from pipeline.cache.maintenance import gc_store, verify_store
from pipeline.cache.remote import start_run
from pipeline.cache.remote_client import RemoteConfig
from pipeline.cache.store import QUARANTINE, Store
from pipeline.errors import UserError
from pipeline.files import (
    DiskFullError,
    UnsafePathError,
    check_own,
    clean,
    copy_file,
    remove,
    write_atomic,
)
from pipeline.graph import plan_cache, records, stats
from pipeline.graph.actions import check_paths
from pipeline.graph.lock import OWN_FILES, check_build_folder, lock_build_folder, sweep_work
from pipeline.graph.plan import Invocation
from pipeline.graph.report import clear_stale, copy_view
from pipeline.graph.report_html import write_report

KEY = "ab" + "1" * 62


@pytest.fixture
def build(tmp_path):
    folder = tmp_path / "build"
    folder.mkdir()
    return folder


def _link(path: Path, target: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def _one_line(error: BaseException, path: Path) -> None:
    text = str(error)
    assert "\n" not in text and str(path) in text and "symbolic link" in text, text


# --- the mechanism -------------------------------------------------------------------------


def test_a_link_anywhere_below_the_root_is_named(build, canary):
    folder, _, _ = canary
    _link(build / ".stages" / "export", folder)
    with pytest.raises(UnsafePathError) as error:
        check_own(build / ".stages" / "export" / "add" / "model.pt2", build)
    _one_line(error.value, build / ".stages" / "export")
    assert f"got a link to {folder}" in str(error.value)
    check_own(build / ".stages" / "lower" / "x", build)  # missing parts are no links


def test_the_root_itself_may_be_a_link(tmp_path, canary):
    real = tmp_path / "elsewhere"
    real.mkdir()
    root = _link(tmp_path / "build", real)
    write_atomic(root / "t" / "report.json", b"{}", root=root)
    assert (real / "t" / "report.json").read_bytes() == b"{}"


def test_writes_and_copies_refuse_a_link_at_the_file_or_its_folder(build, canary):
    folder, file, _ = canary
    _link(build / "t" / "report.json", file)
    _link(build / "u", folder)
    src = build / "src.bin"
    src.write_bytes(b"new")
    for act, path in ((lambda p: write_atomic(p, b"x", root=build), build / "t" / "report.json"),
                      (lambda p: copy_file(src, p, root=build), build / "t" / "report.json"),
                      (lambda p: write_atomic(p, b"x", root=build), build / "u" / "a"),
                      (lambda p: copy_file(src, p), build / "u" / "a")):
        with pytest.raises(UnsafePathError) as error:
            act(path)
        assert "symbolic link" in str(error.value)


def test_remove_takes_the_link_away_never_its_target(build, canary, capsys):
    folder, file, _ = canary
    for link in (_link(build / "d", folder), _link(build / "f", file)):
        assert remove(link, build, say=True)
        assert not os.path.lexists(link)
    err = capsys.readouterr().err
    assert f"removed the symbolic link {build / 'd'} (its target {folder} is left alone)" in err


def test_clean_removes_the_first_link_on_the_way(build, canary):
    folder, _, _ = canary
    _link(build / "t", folder)
    (build / "own").mkdir()
    (build / "own" / "report.json").write_text("{}")
    clean([build / "t" / "add" / "model.bin", build / "own" / "report.json"], build)
    assert not os.path.lexists(build / "t") and not (build / "own" / "report.json").exists()


# --- the build folder ----------------------------------------------------------------------


def test_repro1_a_linked_work_folder_is_refused_not_emptied(build, canary):
    folder, _, _ = canary
    _link(build / ".work", folder)
    with pytest.raises(UnsafePathError) as error:
        sweep_work(build)
    _one_line(error.value, build / ".work")


def test_repro2_a_linked_target_folder_is_refused_not_emptied(build, canary):
    folder, _, _ = canary
    _link(build / "u85-linux", folder)
    with pytest.raises(UnsafePathError) as error:
        clear_stale(build / "u85-linux", keep={"report.json"})
    _one_line(error.value, build / "u85-linux")
    src = build / "model.bin"
    src.write_bytes(b"artifact")
    with pytest.raises(UnsafePathError):
        copy_view(src, build / "u85-linux" / "add" / "model.bin", build)


def test_a_link_inside_a_target_folder_is_removed_itself_as_stale(build, canary):
    folder, _, _ = canary
    (build / "t").mkdir()
    _link(build / "t" / "old-model", folder)
    clear_stale(build / "t", keep={"report.json"})
    assert not os.path.lexists(build / "t" / "old-model")


def test_repro3_a_linked_lock_file_is_refused_not_overwritten(build, canary):
    _, file, _ = canary
    _link(build / ".lock", file)
    with pytest.raises(UnsafePathError) as error:
        lock_build_folder(build)
    _one_line(error.value, build / ".lock")


@pytest.mark.parametrize("name", [*OWN_FILES, "u85-linux", ".stages/export"])
def test_every_own_path_of_the_build_folder_is_checked_before_a_build(build, canary, name):
    folder, file, _ = canary
    if name.startswith(".stages/"):
        (build / ".stages").mkdir()
    _link(build / name, folder if name in (".work", ".stages", "u85-linux", ".stages/export")
          else file)
    with pytest.raises(UnsafePathError) as error:
        check_build_folder(build, ["u85-linux"])
    _one_line(error.value, build / name)
    check_build_folder(build, ["u85-linux"], clean=True)  # doit clean: the link goes
    assert not os.path.lexists(build / name)


def test_plan_cache_records_and_digests_never_write_through_a_link(build, canary,
                                                                   monkeypatch):
    _, file, _ = canary
    _link(build / plan_cache.CACHE_FILE, file)
    (build / "targets.yaml").write_text("targets: {}\n")
    monkeypatch.setattr(plan_cache, "watched_paths", lambda plan, build: set())
    with pytest.raises(UnsafePathError):
        plan_cache.write(build / "targets.yaml", build, None, {})
    _link(build / ".doit.db.checked", file)
    records._remember(build / ".doit.db", [None])  # best effort: nothing written, no error
    records._remember(build / ".doit.db", [[1, 2, 3, 4, 5]])
    _link(build / stats.DIGEST_FILE, file)
    stats.keep_digests_in(build)
    stats._used[("x", 1, 2, 3, 4)] = "0" * 32
    try:
        stats._save()
    finally:
        stats._used.clear()
        stats._where = None


def test_a_damaged_records_file_that_is_a_link_is_moved_aside_as_a_link(build, canary):
    _, file, _ = canary
    _link(build / ".doit.db", file)  # not an SQLite database: damaged
    moved = records.repair(build / ".doit.db")
    assert moved is not None and moved.is_symlink() and not os.path.lexists(build / ".doit.db")


def test_report_html_is_never_written_through_a_link(build, canary):
    _, file, _ = canary
    _link(build / "report.html", file)
    with pytest.raises(UnsafePathError):
        write_report(build, [], build / "report.html")


def test_stage_outputs_and_cmake_trees_under_a_link_fail_the_stage(build, canary):
    folder, _, _ = canary
    _link(build / ".stages" / "runtime" / "gcc", folder)
    inv = Invocation("runtime", "gcc/m55", {}, {"lib": build / ".stages" / "runtime" / "gcc" /
                                                "libx.a"},
                     params={"cmake_dir": str(build / ".stages" / "runtime" / "gcc" / "cmake")})
    with pytest.raises(UnsafePathError) as error:
        check_paths(inv)
    _one_line(error.value, build / ".stages" / "runtime" / "gcc")


def test_the_remote_state_folder_link_is_removed_never_followed(build, canary):
    folder, _, _ = canary
    (build / ".work").mkdir()
    _link(build / ".work" / "remote", folder)
    start_run(RemoteConfig("file:///nowhere", False, str(build / ".work" / "remote")))
    assert not os.path.lexists(build / ".work" / "remote")


# --- the store -----------------------------------------------------------------------------


def _store(tmp_path: Path, keys=(KEY,)) -> Store:
    store = Store(tmp_path / "store")
    src = tmp_path / "out.bin"
    src.write_bytes(b"\x01" * 100)
    for key in keys:
        store.put(key, {"stage": "package"}, {"model.bin": src})
    return store


def test_repro4_gc_removes_a_linked_quarantine_never_its_contents(tmp_path, canary, capsys):
    folder, _, _ = canary
    store = _store(tmp_path)
    _link(store.root / QUARANTINE, folder)
    gc_store(store, max_size=1 << 30)
    assert not os.path.lexists(store.root / QUARANTINE)
    assert "removed the symbolic link" in capsys.readouterr().err
    assert store.has(KEY)


def test_quarantine_through_a_link_is_refused(tmp_path, canary):
    folder, _, _ = canary
    store = _store(tmp_path)
    _link(store.root / QUARANTINE, folder)
    with pytest.raises(UnsafePathError):
        store.quarantine(KEY, "test")
    assert store.has(KEY)


def test_repro5_a_linked_shard_is_refused_by_writes_and_reads(tmp_path, canary):
    folder, _, _ = canary
    store = _store(tmp_path, keys=())
    _link(store.root / KEY[:2], folder)
    src = tmp_path / "x.bin"
    src.write_bytes(b"x")
    for act in (lambda: store.put(KEY, {}, {"x.bin": src}), lambda: store.has(KEY),
                lambda: store.restore(KEY, {"x.bin": tmp_path / "y"}), lambda: store.discard(KEY)):
        with pytest.raises(UnsafePathError) as error:
            act()
        _one_line(error.value, store.root / KEY[:2])


def test_repro5_gc_and_verify_never_follow_a_linked_shard_or_entry(tmp_path, canary, capsys):
    folder, _, _ = canary
    store = _store(tmp_path, keys=("cd" + "2" * 62,))
    _link(store.root / KEY[:2], folder)
    _link(store.root / "cd" / ("cd" + "3" * 62), folder)
    assert verify_store(store) == (1, 100 + len((store.entry("cd" + "2" * 62) /
                                                 "manifest.json").read_bytes()), [])
    assert capsys.readouterr().err.count("is a symbolic link") == 2
    gc_store(store, max_size=0, now=time.time() + 7200)  # everything old, nothing kept
    assert not os.path.lexists(store.root / KEY[:2])
    assert not os.path.lexists(store.root / "cd" / ("cd" + "3" * 62))


def test_a_link_among_a_shards_staging_folders_is_removed_itself(tmp_path, canary):
    folder, _, _ = canary
    store = _store(tmp_path)
    _link(store.root / KEY[:2] / ".stale-link", folder)
    store.put("ab" + "4" * 62, {}, {"model.bin": tmp_path / "out.bin"})  # sweeps the shard
    assert not os.path.lexists(store.root / KEY[:2] / ".stale-link")


def test_a_forged_entry_is_found_by_its_checksum(tmp_path):
    store = _store(tmp_path)
    digest = hashlib.sha256(b"\x01" * 100).hexdigest()
    assert store.holding("model.bin", digest) == KEY
    assert store.holding("model.bin", "0" * 64) is None


# --- a full disk (a real tmpfs) ------------------------------------------------------------


def _leftovers(folder: Path) -> list[str]:
    """Temporary files and staging folders (``.<name>.*``) left under ``folder``."""
    return sorted(p.name for p in folder.rglob(".*") if p.name != ".stages")


def test_repro10_a_full_disk_is_one_line_naming_the_folder_and_the_size(small_disk):
    target = small_disk / "build" / "u85" / "model.bin"
    with pytest.raises(DiskFullError) as error:
        write_atomic(target, bytes(200 * 1024), root=small_disk)
    text = str(error.value)
    assert "\n" not in text
    assert text.startswith(f"{target.parent}: the disk must have room for {200 * 1024} more bytes")
    assert "bytes free (no space left on device)" in text
    assert not target.exists() and _leftovers(small_disk / "build") == []


def test_repro10_a_copy_that_fills_the_disk_leaves_nothing_half_written(small_disk, tmp_path):
    src = tmp_path / "model.pt2"
    src.write_bytes(os.urandom(300 * 1024))
    dest = small_disk / "build" / ".stages" / "export" / "model.pt2"
    with pytest.raises(DiskFullError, match=f"room for {300 * 1024} more bytes"):
        copy_file(src, dest, root=small_disk)
    assert not dest.exists() and _leftovers(small_disk / "build") == []


def test_repro10_a_full_store_keeps_only_whole_entries(small_disk, tmp_path):
    store = Store(small_disk / "store")
    small = tmp_path / "small.bin"
    small.write_bytes(b"s" * 1000)
    store.put(KEY, {"stage": "lower"}, {"small.bin": small})
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(200 * 1024))
    key = "cd" + "5" * 62
    with pytest.raises(DiskFullError) as error:
        store.put(key, {"stage": "export"}, {"big.bin": big, "small.bin": small})
    assert str(error.value).startswith(f"{store.root / 'cd'}: the disk must have room for "
                                       f"{200 * 1024 + 1000} more bytes")
    assert not store.entry(key).exists() and _leftovers(store.root) == []
    assert store.verify(KEY) is None and store.has(KEY)


def test_disk_full_is_a_user_error_printed_without_traceback():
    assert issubclass(DiskFullError, UserError) and issubclass(UnsafePathError, UserError)
