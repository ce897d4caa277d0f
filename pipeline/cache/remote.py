"""A remote store behind the local one: local store -> remote -> compute.

``remote=URL`` (or ``$ETHOSU_PIPELINE_REMOTE``) names an S3 bucket (``s3://bucket/prefix``,
any S3-compatible server), a WebDAV / plain HTTP PUT-GET cache (``http(s)://host/path``) or a
shared folder (``file:///mnt/cache``). The layout is Bazel's split:

- ``cas/<sha[:2]>/<sha256>``: output files by content, immutable and shared between keys;
- ``ac/<key[:2]>/<key>.json``: the entry's ``manifest.json`` (key, record, output checksums),
  written after its blobs and never overwritten (a conditional put where the server has one),
  so a reader never sees half an entry and two writers racing on a key both succeed.

A fetched entry is checked before it reaches the local store: the manifest's record must hash
to the key and every blob to its checksum; anything else is a miss, reported once. Uploads
happen only with ``remote_mode=write``. The remote never fails a build: time-outs are short,
a request is retried at most once, and then the remote is off for the rest of the run (a
marker file in the run's state folder tells the other doit processes). The client library,
obstore, is imported on the first local miss only, so a no-op build never loads it.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from pipeline.cache.key import canonical_json
from pipeline.cache.remote_client import RemoteConfig, make_client, remote_config, short_error
from pipeline.cache.store import MANIFEST, Store
from pipeline.files import make_dirs, remove, write_atomic

__all__ = ["Remote", "RemoteConfig", "open_remote", "remote_config", "start_run", "summary"]

HEX64 = re.compile(r"[0-9a-f]{64}")
COUNTERS = ("hits", "misses", "damaged", "down", "up", "uploaded", "errors")


def record_matches(key: str, record: object) -> bool:
    """Whether a manifest's record is the one ``key`` was computed from (a stage key, the
    second-level key of the files an export loaded, or the index of those files)."""
    if not isinstance(record, dict):
        return False
    if _sha(canonical_json(record)) == key:
        return True
    if set(record) == {"stage", "key"} and record["stage"] == "loaded-files":
        return _sha(f"loaded-files:{record['key']}") == key  # graph/loaded.py index_key
    if "loaded" in record:
        first = _sha(canonical_json({k: v for k, v in record.items() if k != "loaded"}))
        return _sha(canonical_json({"key": first, "loaded": record["loaded"]})) == key
    return False


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Off(Exception):
    """The remote failed in a way that turns it off for the run."""


class Denied(Off):
    """The server refused the credentials (401/403): on an upload, only writes go off."""


class Remote:
    """One process's view of the remote: the client (made on first use), counters, and the
    run's shared off switches."""

    def __init__(self, config: RemoteConfig):
        self.config = config
        self.state = Path(config.state)
        self.counts = dict.fromkeys(COUNTERS, 0)
        self._client = None

    # ---- the client -------------------------------------------------------------------
    def client(self):
        if self._client is None:
            self._client = make_client(self.config)
        return self._client

    def _call(self, op: str, *args, **kwargs):
        """One obstore call; FileNotFoundError passes through (a miss), the rest is Off."""
        import obstore
        from obstore.exceptions import PermissionDeniedError, UnauthenticatedError

        try:
            return getattr(obstore, op)(self.client(), *args, **kwargs)
        except FileNotFoundError:
            raise
        except (PermissionDeniedError, UnauthenticatedError) as error:
            raise Denied(f"{type(error).__name__}: access denied") from error
        except Exception as error:  # noqa: BLE001 - the remote must never fail a build
            raise Off(short_error(error)) from error

    # ---- run-wide switches ------------------------------------------------------------
    def usable(self, writing: bool = False) -> bool:
        if (self.state / "off").exists():
            return False
        return not writing or (self.config.write and not (self.state / "no-writes").exists())

    def _switch_off(self, marker: str, message: str) -> None:
        self.counts["errors"] += 1
        make_dirs(self.state, self.state.parent.parent)
        try:  # the first process to trip it warns; the others see the marker
            with open(self.state / marker, "x") as handle:
                handle.write(message)
        except FileExistsError:
            return
        print(f"warning: {message}", file=sys.stderr, flush=True)

    def _unreachable(self, why: str) -> None:
        self._switch_off("off", f"remote cache {self.config.url} unreachable ({why}); "
                                "continuing with the local store for the rest of this run")

    # ---- download ---------------------------------------------------------------------
    def fetch(self, store: Store, key: str, counted: bool = True) -> bool:
        """Copy the remote entry for ``key`` into ``store`` (checked); False on a miss."""
        if not self.usable():
            return False
        try:
            found = self._fetch(store, key)
        except Off as off:
            self._unreachable(str(off))
            found = False
        if counted or found:
            self.counts["hits" if found else "misses"] += 1
        self.save()
        return found

    def _fetch(self, store: Store, key: str) -> bool:
        try:
            data = bytes(self._call("get", ac_path(key)).bytes())
        except FileNotFoundError:
            return False
        self.counts["down"] += len(data)
        manifest, why = parse_manifest(key, data)
        if why:
            return self._damaged(key, why)
        store.root.mkdir(parents=True, exist_ok=True)
        # A fresh folder of the store's own (mkdtemp): no link can be in it.
        scratch = Path(tempfile.mkdtemp(prefix=".remote-", dir=store.root))
        try:
            files = {}
            for name, sha in manifest["outputs"].items():
                try:
                    blob = bytes(self._call("get", cas_path(sha)).bytes())
                except FileNotFoundError:
                    return self._damaged(key, f"{name} is missing")
                self.counts["down"] += len(blob)
                if hashlib.sha256(blob).hexdigest() != sha:
                    return self._damaged(key, f"{name} does not match its checksum")
                files[name] = scratch / name
                files[name].write_bytes(blob)
                os.chmod(files[name], 0o755 if name in manifest["modes"] else 0o644)
            store.put(key, manifest["record"], files)
        finally:
            remove(scratch, store.root)
        return True

    def _damaged(self, key: str, why: str) -> bool:
        self.counts["damaged"] += 1
        print(f"warning: remote cache entry {key[:12]} at {self.config.url} is damaged ({why});"
              " recomputing", file=sys.stderr, flush=True)
        return False

    # ---- upload -----------------------------------------------------------------------
    def upload(self, store: Store, key: str) -> bool:
        """Publish the local entry for ``key``: blobs first, the manifest last and only if
        absent. True when the remote holds the entry afterwards."""
        if not self.usable(writing=True):
            return False
        try:
            done = self._upload(store, key)
        except Denied as denied:
            self._switch_off("no-writes", f"remote cache {self.config.url} refused an "
                             f"upload ({denied}); not uploading for the rest of this run")
            done = False
        except Off as off:
            self._unreachable(str(off))
            done = False
        except (OSError, ValueError, KeyError):  # the local entry went away (gc) or is bad
            done = False
        self.save()
        return done

    def _upload(self, store: Store, key: str) -> bool:
        manifest = store.manifest(key)
        manifest["modes"] = {name: True for name in manifest["outputs"]
                             if os.access(store.entry(key) / name, os.X_OK)}
        for name, sha in manifest["outputs"].items():
            try:
                self._call("head", cas_path(sha))
                continue
            except FileNotFoundError:
                pass
            data = (store.entry(key) / name).read_bytes()
            if hashlib.sha256(data).hexdigest() != sha:
                return False  # the local entry is damaged: publish nothing of it
            self._call("put", cas_path(sha), data)
            self.counts["up"] += len(data)
        body = json.dumps(manifest, indent=2, sort_keys=True).encode()
        if self._put_if_absent(ac_path(key), body):
            self.counts["up"] += len(body)
            self.counts["uploaded"] += 1
        return True

    def _put_if_absent(self, path: str, body: bytes) -> bool:
        """Write ``path`` unless it exists; False when another writer got there first."""
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        if urlsplit(self.config.url).scheme in ("http", "https"):
            # WebDAV has no put-if-absent (nginx ignores If-None-Match): check, then write.
            # Two racing writers then both write a valid manifest of the same key.
            try:
                self._call("head", path)
                return False
            except FileNotFoundError:
                self._call("put", path, body)
                return True
        try:
            self._call("put", path, body, mode="create")
        except Off as off:
            if isinstance(off.__cause__, (AlreadyExistsError, PreconditionError)):
                return False
            raise
        return True

    def keys(self) -> list[str]:
        """Every key the remote holds an entry for (``pull``)."""
        # One folder level at a time: WebDAV servers answer PROPFIND with Depth 1, rarely
        # with Depth infinity (nginx's dav-ext refuses it), and S3 lists either way. Names
        # are taken from the last path segment: obstore's HTTPStore lists paths with the
        # URL's own path in front and the folder itself among its entries.
        shards = {p.rstrip("/").rsplit("/", 1)[-1]
                  for p in self._call("list_with_delimiter", "ac")["common_prefixes"]}
        found = set()
        for shard in sorted(s for s in shards if len(s) == 2):
            for meta in self._call("list_with_delimiter", f"ac/{shard}")["objects"]:
                name = meta["path"].rsplit("/", 1)[-1]
                key = name.removesuffix(".json")
                if name.endswith(".json") and HEX64.fullmatch(key) and key.startswith(shard):
                    found.add(key)
        return sorted(found)

    # ---- counters ---------------------------------------------------------------------
    def save(self) -> None:
        """Write this process's counters where the end-of-run summary reads them."""
        write_atomic(self.state / f"counts-{os.getpid()}.json", json.dumps(self.counts).encode(),
                     root=self.state.parent.parent)


def ac_path(key: str) -> str:
    return f"ac/{key[:2]}/{key}.json"


def cas_path(sha: str) -> str:
    return f"cas/{sha[:2]}/{sha}"


def parse_manifest(key: str, data: bytes) -> tuple[dict, str | None]:
    """The manifest and None, or why it cannot be the entry of ``key``."""
    try:
        manifest = json.loads(data)
        outputs = manifest["outputs"]
    except (ValueError, UnicodeDecodeError, KeyError, TypeError):
        return {}, f"{MANIFEST} is unreadable"
    if manifest.get("key") != key or not record_matches(key, manifest.get("record")):
        return {}, f"{MANIFEST} belongs to another key"
    if not isinstance(outputs, dict) or not all(
            isinstance(n, str) and isinstance(d, str) and HEX64.fullmatch(d) and "/" not in n
            and n not in ("", ".", "..", MANIFEST) for n, d in outputs.items()):
        return {}, f"{MANIFEST} lists no valid outputs"
    modes = manifest.get("modes", {})  # executable files (not in the key: a runner's x bit)
    manifest["modes"] = {n for n in modes if n in outputs} if isinstance(modes, dict) else set()
    return manifest, None


_OPEN: dict[RemoteConfig, Remote] = {}


def open_remote(config: RemoteConfig | None) -> Remote | None:
    """The process's Remote for ``config`` (one per run, so its switches and counters last)."""
    if config is None:
        return None
    if config not in _OPEN:
        _OPEN[config] = Remote(config)
    return _OPEN[config]


def start_run(config: RemoteConfig) -> None:
    """Empty the run's state folder and print the summary when the doit process exits."""
    state = Path(config.state)
    remove(state, state.parent.parent)  # <build>/.work/remote, never through a link
    atexit.register(print_summary, config)


def summary(config: RemoteConfig) -> str | None:
    """One line: the counters of every process of the run; None when none used the remote."""
    totals = dict.fromkeys(COUNTERS, 0)
    files = sorted(Path(config.state).glob("counts-*.json"))
    for file in files:
        try:
            for name, value in json.loads(file.read_text()).items():
                totals[name] = totals.get(name, 0) + int(value)
        except (OSError, ValueError, TypeError, AttributeError):
            continue
    if not files:
        return None
    off = " (off after an error)" if (Path(config.state) / "off").exists() else ""
    return (f"remote cache {config.url} ({'write' if config.write else 'read'}){off}: "
            f"{totals['hits']} hits, {totals['misses']} misses, {totals['damaged']} damaged, "
            f"{_mib(totals['down'])} down, {_mib(totals['up'])} up "
            f"({totals['uploaded']} entries), {totals['errors']} errors")


def print_summary(config: RemoteConfig) -> None:
    line = summary(config)
    if line:
        print(line, file=sys.stderr, flush=True)


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.2f} MiB"
