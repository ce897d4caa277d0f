"""A content-addressed store of stage outputs: ``<root>/<key[:2]>/<key>/``.

Entries are written to a temporary folder inside the store and renamed into place, so a
reader never sees half an entry and an interrupted build leaves nothing behind but a
temporary folder that the next write ignores. Each entry carries ``manifest.json`` with the
key record, the output checksums and the time it was made. The store is a plain directory:
CI can persist it between runs and several projects can share it.

Nothing damaged is ever handed back: ``restore`` checks every file against the manifest's
checksum while copying it out, and an entry whose manifest or files do not check out is
reported in one line and moved aside to ``<root>/quarantine/`` (then recomputed by the
caller). A restore stamps the entry's folder time, which ``gc`` reads as its last use.

Nothing is written, renamed or removed through a symbolic link (``pipeline/files.py``): a
shard, an entry or the quarantine that is a link fails the build naming it (``gc`` removes
such links, never what they point to). A full disk while an entry is written is one line
naming the folder and the size of the entry; the half-written staging folder is removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from pipeline.cache.key import file_digest
from pipeline.files import DiskFullError, check_own, copy_file, is_full, make_dirs, remove, rename

MANIFEST = "manifest.json"
DEFAULT_STORE = Path("~/.cache/ethosu-pipeline/store")
QUARANTINE = "quarantine"
STALE_SECONDS = 3600  # a store write takes seconds; an older staging folder is a leftover
_HOST = socket.gethostname().replace("-", "_")


class DamagedEntry(Exception):
    """A store entry whose manifest or files do not match (internal: it becomes a miss)."""


class Store:
    """Content-addressed artifact store rooted at a directory."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def entry(self, key: str) -> Path:
        return self.root / key[:2] / key

    def own(self, path: Path) -> Path:
        """``path`` under the store, checked to hold no symbolic link (UnsafePathError)."""
        check_own(path, self.root)
        return path

    def has(self, key: str) -> bool:
        """True when a complete entry for ``key`` exists (a readable manifest listing files
        that are all there). A damaged entry is quarantined and is not a hit."""
        if not (self.own(self.entry(key)) / MANIFEST).is_file():
            return False
        try:
            outputs = self._outputs(key)
            missing = [name for name in outputs if not (self.entry(key) / name).is_file()]
            if missing:
                raise DamagedEntry(f"{missing[0]} is missing")
        except DamagedEntry as damage:
            self.quarantine(key, str(damage))
            return False
        return True

    def _outputs(self, key: str) -> dict[str, str]:
        """The manifest's ``{file name: sha256}``; DamagedEntry when it is not one."""
        try:
            outputs = json.loads((self.entry(key) / MANIFEST).read_text())["outputs"]
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
            raise DamagedEntry(f"{MANIFEST} is unreadable ({type(error).__name__})") from error
        if not isinstance(outputs, dict) or not all(
            isinstance(n, str) and isinstance(d, str) and "/" not in n and n not in ("", ".", "..")
            for n, d in outputs.items()
        ):
            raise DamagedEntry(f"{MANIFEST} lists no valid outputs")
        return outputs

    def quarantine(self, key: str, why: str, say: bool = True) -> Path | None:
        """Move a damaged entry aside (with ``say``, one line on stderr); None if another
        process did."""
        dest = self.root / QUARANTINE / f"{key}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        make_dirs(dest.parent, self.root)
        try:
            rename(self.entry(key), dest, self.root)
        except OSError:
            return None
        if say:
            print(f"   store: entry {key[:12]} is damaged ({why}); moved to {dest}, "
                  "recomputing", file=sys.stderr, flush=True)
        return dest

    def verify(self, key: str) -> str | None:
        """Why the entry for ``key`` is damaged, or None when every file matches."""
        try:
            for name, expected in self._outputs(key).items():
                path = self.entry(key) / name
                if not path.is_file():
                    return f"{name} is missing"
                if file_digest(path) != expected:
                    return f"{name} does not match its checksum"
        except DamagedEntry as damage:
            return str(damage)
        return None

    def put(self, key: str, record: Mapping, outputs: Mapping[str, Path]) -> Path:
        """Copy ``outputs`` (store name -> file) into the entry for ``key`` atomically."""
        final = self.own(self.entry(key))
        make_dirs(final.parent, self.root)
        # The staging folder names its writer, so a later writer can tell a killed one's.
        staging = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-{_HOST}-{os.getpid()}-",
                                        dir=final.parent))
        try:
            checksums = {}
            for name, src in outputs.items():
                shutil.copy(src, staging / name)  # content and permission bits
                checksums[name] = file_digest(staging / name)
            manifest = {"key": key, "record": dict(record), "outputs": checksums,
                        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
            try:
                rename(staging, final, self.root)
            except OSError as error:
                if is_full(error):
                    raise
                if not self.has(key):  # a concurrent writer lost the race half-way: retry
                    remove(final, self.root)
                    rename(staging, final, self.root)
        except OSError as error:
            if is_full(error):
                raise DiskFullError(final.parent, _total(outputs.values())) from None
            raise
        finally:
            remove(staging, self.root)
        sweep_staging(final.parent)
        return final

    def restore(self, key: str, outputs: Mapping[str, Path]) -> bool:
        """Copy the entry's files (store name -> destination) out, each checked against its
        checksum and renamed into place. A damaged entry is quarantined and False returned
        (destinations already written hold correct copies of their own files)."""
        self.own(self.entry(key))
        try:
            checksums = self._outputs(key)
            for name, dest in outputs.items():
                if name not in checksums:
                    raise DamagedEntry(f"{name} is not in {MANIFEST}")
                copy_atomic(self.entry(key) / name, Path(dest), checksums[name])
        except (DamagedEntry, FileNotFoundError) as damage:
            why = str(damage) if isinstance(damage, DamagedEntry) else "a file went missing"
            self.quarantine(key, why)
            return False
        os.utime(self.entry(key))  # last use, for gc
        return True

    def read(self, key: str, name: str) -> bytes | None:
        """One file of an entry, checked against its checksum; None on a miss (a damaged
        entry is quarantined)."""
        if not self.has(key):
            return None
        try:
            checksums = self._outputs(key)
            data = (self.entry(key) / name).read_bytes()
            if hashlib.sha256(data).hexdigest() != checksums.get(name):
                raise DamagedEntry(f"{name} does not match its checksum")
        except (DamagedEntry, OSError) as damage:
            self.quarantine(key, str(damage) if isinstance(damage, DamagedEntry)
                            else "a file went missing")
            return None
        return data

    def discard(self, key: str) -> bool:
        """Remove an entry (renamed out first: a concurrent reader sees it whole or not at
        all); False when it was not there (another process removed it)."""
        trash = self.root / f".trash-{os.getpid()}-{time.monotonic_ns()}"
        try:
            rename(self.entry(key), trash, self.root)
        except OSError:
            return False
        remove(trash, self.root)
        return True

    def holding(self, name: str, digest: str) -> str | None:
        """The key of an entry whose ``name`` has the checksum ``digest`` (a scan of every
        manifest: for naming where a bad file came from, never on a hot path)."""
        for manifest in self.root.glob(f"[0-9a-f][0-9a-f]/*/{MANIFEST}"):
            try:
                if json.loads(manifest.read_text())["outputs"].get(name) == digest:
                    return manifest.parent.name
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue
        return None

    def manifest(self, key: str) -> dict:
        return json.loads((self.entry(key) / MANIFEST).read_text())


def _owner_gone(name: str, now: float, mtime: float) -> bool:
    """Whether the writer of a staging folder ``.<key>-<host>-<pid>-<random>`` is gone: a
    process of this host that no longer runs, or (another host, an older name) a folder
    untouched for ``STALE_SECONDS``."""
    if now - mtime > STALE_SECONDS:
        return True
    parts = name.split("-")
    if len(parts) < 4 or parts[1] != _HOST or not parts[2].isdigit():
        return False
    try:
        os.kill(int(parts[2]), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False


def sweep_staging(shard: Path, now: float | None = None) -> int:
    """Remove the staging folders in one ``<root>/xx/`` shard whose writer is gone (killed
    mid-write). Returns how many were removed."""
    now = time.time() if now is None else now
    removed = 0
    check_own(shard, shard.parent)  # never a sweep of what a link points to
    for path in shard.glob(".*"):
        try:
            found = os.lstat(path)
        except FileNotFoundError:
            continue
        # A link is no staging folder of ours: it is removed itself, never followed.
        if os.path.islink(path) or (os.path.isdir(path)
                                    and _owner_gone(path.name, now, found.st_mtime)):
            remove(path, shard.parent)
            removed += 1
    return removed


def _total(paths) -> int:
    return sum(os.stat(p).st_size for p in paths if os.path.exists(p))


def copy_atomic(src: Path, dest: Path, sha256: str | None = None) -> None:
    """Copy ``src`` (content and permission bits) to ``dest`` through a temporary file; with
    ``sha256``, the copied bytes must hash to it (else DamagedEntry, ``dest`` untouched).
    Neither ``dest`` nor its folder may be a symbolic link (``pipeline/files.py``)."""

    def matches(digest: str) -> None:
        if sha256 is not None and digest != sha256:
            raise DamagedEntry(f"{src.name} does not match its checksum")

    copy_file(src, dest, check=matches)


def store_root(value: str | None) -> Path:
    """The store: ``store=PATH``, else $ETHOSU_PIPELINE_STORE, else ~/.cache/ethosu-pipeline/store."""
    raw = value or os.environ.get("ETHOSU_PIPELINE_STORE") or str(DEFAULT_STORE)
    return Path(raw).expanduser().resolve()
