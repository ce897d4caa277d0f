"""Store upkeep: check every entry (``verify``) and remove entries by age and size (``gc``).

Both are safe while builds run: a removed entry is first renamed out of the store (readers
see it whole or not at all; a restore that loses the race recomputes), and only leftovers
whose writer is gone (a dead process of this host, or untouched for ``STALE_SECONDS``) are
swept. Neither follows a symbolic link: ``verify`` names the links it finds, ``gc`` removes
them (never what they point to).
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pipeline.cache.store import QUARANTINE, STALE_SECONDS, Store, sweep_staging
from pipeline.files import remove

_KEY = re.compile(r"^[0-9a-f]{64}$")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGT]?)i?B?$", re.IGNORECASE)
_AGE = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass
class Entry:
    key: str
    path: Path
    size: int
    last_use: float


def parse_size(text: str) -> int:
    """``2G``, ``500M``, ``10KiB``, ``123`` -> bytes; ValueError naming the format."""
    match = _SIZE.match(text.strip())
    if not match:
        raise ValueError(f"--max-size must be a number with an optional K/M/G/T unit; got {text!r}")
    return int(float(match[1]) * _UNITS[match[2].upper()])


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``2w`` -> seconds; ValueError naming the format."""
    match = _AGE.match(text.strip())
    if not match:
        raise ValueError(f"--older-than must be a number with a unit s/m/h/d/w; got {text!r}")
    return float(match[1]) * _SECONDS[match[2]]


def entries(store: Store) -> list[Entry]:
    """Every complete-looking entry folder ``<root>/xx/<key>``, least recently used first."""
    found = []
    for shard in store.root.glob("[0-9a-f][0-9a-f]"):
        if shard.is_symlink():
            continue
        for path in shard.iterdir():
            if _KEY.match(path.name) and path.is_dir() and not path.is_symlink():
                try:
                    size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
                    found.append(Entry(path.name, path, size, path.stat().st_mtime))
                except FileNotFoundError:  # removed by a concurrent gc
                    continue
    return sorted(found, key=lambda e: e.last_use)


def verify_store(store: Store) -> tuple[int, int, list[str]]:
    """Check every entry's files against its manifest; quarantine the damaged ones.

    Returns (entries checked, bytes read, keys quarantined)."""
    for link in links(store):
        print(f"   store: {link} is a symbolic link to {os.readlink(link)}, never followed; "
              "`gc` removes it", file=sys.stderr, flush=True)
    checked, size, bad = 0, 0, []
    for entry in entries(store):
        why = store.verify(entry.key)
        checked, size = checked + 1, size + entry.size
        if why is not None and store.quarantine(entry.key, why) is not None:
            bad.append(entry.key)
    return checked, size, bad




def links(store: Store) -> list[Path]:
    """The symbolic links where the store keeps its own folders: shards, the quarantine,
    trash, and entries in the shards."""
    found = [p for p in (*store.root.glob("[0-9a-f][0-9a-f]"), store.root / QUARANTINE,
                         *store.root.glob(".trash-*")) if p.is_symlink()]
    for shard in store.root.glob("[0-9a-f][0-9a-f]"):
        if not shard.is_symlink():
            found += [p for p in shard.iterdir() if p.is_symlink()]
    return found


def sweep_leftovers(store: Store, now: float | None = None) -> int:
    """Remove staging folders of killed writers and trash older than ``STALE_SECONDS``
    (a link there is removed itself, never followed)."""
    now = time.time() if now is None else now
    removed = 0
    for link in links(store):
        remove(link, store.root, say=True)
    removed += sum(sweep_staging(shard, now) for shard in store.root.glob("[0-9a-f][0-9a-f]"))
    for path in store.root.glob(".trash-*"):
        try:
            if now - os.lstat(path).st_mtime > STALE_SECONDS:
                remove(path, store.root)
                removed += 1
        except FileNotFoundError:
            continue
    return removed


def gc_store(store: Store, max_size: int | None = None, older_than: float | None = None,
             dry_run: bool = False, now: float | None = None) -> tuple[list[Entry], int]:
    """Remove entries unused for ``older_than`` seconds, then the least recently used ones
    until the store holds at most ``max_size`` bytes; also the quarantine and stale leftovers.

    Returns (entries removed, bytes kept)."""
    now = time.time() if now is None else now
    if not dry_run:
        for link in links(store):  # before anything is listed through one
            remove(link, store.root, say=True)
    all_entries = entries(store)
    kept = sum(e.size for e in all_entries)
    removed = []
    for entry in all_entries:
        too_old = older_than is not None and now - entry.last_use > older_than
        too_big = max_size is not None and kept > max_size
        if not (too_old or too_big):
            continue
        if dry_run or store.discard(entry.key):
            removed.append(entry)
            kept -= entry.size
    if not dry_run:
        sweep_leftovers(store, now)
        quarantine = store.root / QUARANTINE
        for path in quarantine.glob("*") if not quarantine.is_symlink() else ():
            if older_than is None or now - os.lstat(path).st_mtime > older_than:
                remove(path, store.root)
    return removed, kept
