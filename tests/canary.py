"""Fixtures for the hostile-folder tests (issue 28): a canary outside the build folder and
the store, a folder (sub-folders, a hidden folder older than an hour: what the symlink
reproductions destroyed) and a file, hashed before and after a test (names, kinds, modes,
times and contents, never following a link); and a small real disk (an 8 MiB tmpfs) that
is nearly full."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest


def digest(path: Path) -> str:
    """Everything under ``path`` (never following a link): names, kinds, modes, times and
    file contents."""
    digest = hashlib.sha256()
    paths = [path] if path.is_file() else sorted(path.rglob("*"))
    for item in paths:
        found = os.lstat(item)
        digest.update(f"{item}|{found.st_mode}|{found.st_mtime_ns}|{found.st_size}".encode())
        if item.is_file() and not item.is_symlink():
            digest.update(item.read_bytes())
    if path.is_dir():
        digest.update(str(os.lstat(path).st_mtime_ns).encode())
    return digest.hexdigest()


def plant(root: Path) -> tuple[Path, Path, Callable[[], None]]:
    """``(folder, file, check)`` under ``root``: a folder and a file outside the build and the
    store, with the kinds of things the reproductions destroyed (sub-folders, a hidden folder
    older than an hour); ``check()`` asserts both are as they were."""
    folder = root / "canary"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "weights.bin").write_bytes(os.urandom(256))
    (folder / "notes.txt").write_text("keep me\n")
    hidden = folder / ".old-cache-1234"
    hidden.mkdir()
    (hidden / "x").write_text("old")
    two_hours_ago = time.time() - 7200
    os.utime(hidden, (two_hours_ago, two_hours_ago))
    file = root / "canary.txt"
    file.write_text("precious\n")
    before = (digest(folder), digest(file))

    def check():
        assert (digest(folder), digest(file)) == before, f"the canary in {root} was touched"

    return folder, file, check


@pytest.fixture
def canary(tmp_path):
    """A canary (``plant``) beside the test's own folders, checked again after the test."""
    folder, file, check = plant(tmp_path)
    yield folder, file, check
    check()


@pytest.fixture(scope="module")
def module_canary(tmp_path_factory):
    """A canary for a module's shared builds: a module-scoped build fixture asks for it, so it
    stands before the build; a test calls its ``check()`` after, and teardown checks again."""
    folder, file, check = plant(tmp_path_factory.mktemp("canary"))
    yield folder, file, check
    check()


@pytest.fixture
def small_disk(tmp_path):
    """An 8 MiB tmpfs, nearly full: 64 KiB left (a ``ballast`` file holds the rest; shrink
    it to leave more). Skipped where mounting is not permitted (not root)."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        free = os.statvfs(where).f_bavail * os.statvfs(where).f_frsize
        (where / "ballast").write_bytes(bytes(free - 64 * 1024))
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)
