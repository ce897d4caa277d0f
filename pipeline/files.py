"""Safe file operations for the build folder and the store: every delete, rename, truncation
and write of the project goes through here.

Two rules, as git and Bazel keep for their own trees:
- A file is written whole or not at all: through a temporary file in the destination folder,
  renamed into place, so a killed process never leaves half a file under the final name; a
  full disk is one line naming the folder and the space needed (``DiskFullError``), and the
  half-written temporary file is removed.
- Nothing is done through a symbolic link. Every operation names the folder it belongs to
  (``root``: the build folder or the store) and checks with ``lstat`` that no part of the
  path below that root is a link (``check_own``); a link where the build expects its own file
  or folder is an ``UnsafePathError`` naming it, never followed and never silently replaced.
  ``remove`` takes a link away itself (``doit clean``, ``gc``), never what it points to. The
  root itself may be a link (a build folder or a store on another disk is the user's choice).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from pipeline.errors import UserError, see

_FULL = (errno.ENOSPC, errno.EDQUOT)


class UnsafePathError(UserError):
    """A symbolic link where the build or the store expects its own file or folder."""

    def __init__(self, path: Path, root: Path):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        self.path = path
        super().__init__(
            f"{path}: a path the build writes under {root} must be its own file or folder, "
            f"not a symbolic link; got a link to {target}. Remove the link (the build never "
            f"writes or deletes through one) {see('docs/errors.md#symbolic-links')}")


class DiskFullError(UserError):
    """The disk holding a folder the build writes to filled up."""

    def __init__(self, folder: Path, needed: int | None):
        try:
            free = shutil.disk_usage(folder).free
        except OSError:
            free = None
        self.folder, self.needed = folder, needed
        need = (f"room for {needed} more bytes" if needed is not None
                else "room for what the stage writes")
        got = f"{free} bytes free" if free is not None else "a full disk"
        super().__init__(
            f"{folder}: the disk must have {need}; got {got} (no space left on device). "
            f"Free space there, or point build=/store= elsewhere "
            f"{see('docs/errors.md#disk-full')}")


def check_free(folder: Path, need: int) -> None:
    """``DiskFullError`` when the disk of ``folder`` has less than ``need`` bytes free."""
    free = shutil.disk_usage(folder).free
    if free < need:
        raise DiskFullError(Path(folder), need - free)


def is_full(error: BaseException) -> bool:
    """Whether ``error`` is the OS saying a disk (or a quota) is full."""
    return isinstance(error, OSError) and error.errno in _FULL


def first_link(path: Path, root: Path) -> Path | None:
    """The first part of ``path`` below ``root`` that is a symbolic link (``path`` itself
    included), or None; the parts that do not exist yet are not links."""
    path, root = Path(path), Path(root)
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise ValueError(f"{path} is not under {root}") from None
    current = root
    for part in parts:
        current = current / part
        try:
            found = os.lstat(current)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(found.st_mode):
            return current
    return None


def check_own(path: Path, root: Path) -> None:
    """Raise ``UnsafePathError`` when ``path`` or a folder between ``root`` and it is a
    symbolic link."""
    link = first_link(path, root)
    if link is not None:
        raise UnsafePathError(link, Path(root))


def clean(paths, root: Path) -> None:
    """``doit clean`` of files under ``root``: each is removed, or the first link on its way
    (never what the link points to), with one line saying so."""
    for path in paths:
        link = first_link(Path(path), root)
        remove(link or Path(path), root, say=link is not None)


def make_dirs(path: Path, root: Path) -> Path:
    """``mkdir -p`` of a folder under ``root``, never through a link."""
    check_own(path, root)
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        if is_full(error):
            raise DiskFullError(Path(path).parent, None) from None
        raise
    return Path(path)


def _root(path: Path, root: Path | None) -> Path:
    """Without a root, the file's own folder is the last one checked."""
    return Path(root) if root is not None else Path(path).parent.parent


def write_atomic(path: Path, data: bytes, root: Path | None = None) -> None:
    """Write bytes through a temporary file in the destination folder (under ``root``:
    the build folder or the store; without it, the destination's folder)."""
    path = Path(path)
    make_dirs(path.parent, _root(path, root))
    check_own(path, _root(path, root))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes files private; outputs are ordinary files
        os.replace(tmp, path)
    except BaseException as error:
        Path(tmp).unlink(missing_ok=True)
        if is_full(error):
            raise DiskFullError(path.parent, len(data)) from None
        raise


def write_json_atomic(path: Path, data: dict, root: Path | None = None) -> None:
    """``data`` as indented JSON (a trailing newline), written atomically."""
    write_atomic(path, (json.dumps(data, indent=2) + "\n").encode(), root)


def copy_file(src: Path, dest: Path, root: Path | None = None, check=None) -> None:
    """Copy ``src`` (content and permission bits) to ``dest`` under ``root`` through a
    temporary file. ``check(digest)``, when given, sees the sha256 of the copied bytes
    before they are renamed into place and may raise to keep ``dest`` untouched."""
    import hashlib

    dest = Path(dest)
    make_dirs(dest.parent, _root(dest, root))
    check_own(dest, _root(dest, root))
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    try:
        digest = hashlib.sha256()
        with open(src, "rb") as source, os.fdopen(fd, "wb") as target:
            while chunk := source.read(1 << 20):
                digest.update(chunk)
                target.write(chunk)
        if check is not None:
            check(digest.hexdigest())
        shutil.copymode(src, tmp)
        os.replace(tmp, dest)
    except BaseException as error:
        Path(tmp).unlink(missing_ok=True)
        if is_full(error):
            raise DiskFullError(dest.parent, _size(src)) from None
        raise


def _size(path: Path) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def remove(path: Path, root: Path, say: bool = False) -> bool:
    """Remove a file or a folder tree under ``root``; a link is removed itself, never what it
    points to (with ``say``, one line on stderr says so). Whether something was removed."""
    path = Path(path)
    check_own(path.parent, root)
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(found.st_mode):
        target = os.readlink(path)
        path.unlink(missing_ok=True)
        if say:
            print(f"   removed the symbolic link {path} (its target {target} is left alone)",
                  file=sys.stderr, flush=True)
    elif stat.S_ISDIR(found.st_mode):
        # rmtree works through directory handles and never follows a link inside the tree.
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
    return True


def rename(src: Path, dest: Path, root: Path) -> None:
    """``os.rename`` of two paths under ``root`` (the link check covers both folders; a link
    at ``src`` itself is renamed, not followed)."""
    check_own(Path(src).parent, root)
    check_own(Path(dest), root)
    os.rename(src, dest)


def open_no_follow(path: Path, root: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` of a file under ``root`` that refuses a link at the file itself."""
    check_own(Path(path).parent, root)
    try:
        return os.open(path, flags | os.O_NOFOLLOW, mode)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UnsafePathError(Path(path), root) from None
        raise
