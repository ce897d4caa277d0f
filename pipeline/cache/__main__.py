"""``python -m pipeline.cache verify|gc|push|pull``: check or trim the artifact store, or
copy it to and from a remote store."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pipeline.cache.maintenance import gc_store, parse_age, parse_size, verify_store
from pipeline.cache.store import store_root, MANIFEST, Store
from pipeline.errors import see


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 damaged entries, 2 bad usage)."""
    parser = argparse.ArgumentParser(prog="python -m pipeline.cache",
                                     description="Check, trim, push or pull the store.")
    parser.add_argument("--store", help="store folder (default: $ETHOSU_PIPELINE_STORE, else "
                                        "~/.cache/ethosu-pipeline/store)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("verify", help="check every entry's checksums; quarantine bad ones")
    gc = commands.add_parser("gc", help="remove entries by age and/or to a size budget, "
                                        "least recently used first")
    gc.add_argument("--max-size", help="keep at most this much, e.g. 2G, 500M")
    gc.add_argument("--older-than", help="remove entries unused for this long, e.g. 30d, 12h")
    gc.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")
    for name, text in (("push", "upload every local entry the remote lacks"),
                       ("pull", "download every remote entry the local store lacks")):
        sync = commands.add_parser(name, help=text)
        sync.add_argument("--remote", help="remote URL (default: $ETHOSU_PIPELINE_REMOTE)")
    args = parser.parse_args(argv)
    store = Store(store_root(args.store))
    if args.command in ("push", "pull"):
        return sync_remote(store, args.command, args.remote)
    if not store.root.is_dir():
        print(f"store: {store.root} must be a folder; got none there", file=sys.stderr)
        return 2
    started = time.perf_counter()
    if args.command == "verify":
        checked, size, bad = verify_store(store)
        seconds = time.perf_counter() - started
        print(f"store {store.root}: {checked} entries, {_mib(size)} checked in {seconds:.2f} s "
              f"({size / (1 << 20) / max(seconds, 1e-9):.0f} MiB/s); {len(bad)} damaged "
              "(moved to quarantine/)")
        return 1 if bad else 0
    try:
        max_size = parse_size(args.max_size) if args.max_size else None
        older_than = parse_age(args.older_than) if args.older_than else None
    except ValueError as error:
        print(f"python -m pipeline.cache gc: {error}", file=sys.stderr)
        return 2
    if max_size is None and older_than is None:
        print("python -m pipeline.cache gc: --max-size or --older-than must be given; got "
              f"neither {see('docs/commands.md#python--m-pipelinecache')}", file=sys.stderr)
        return 2
    removed, kept = gc_store(store, max_size, older_than, args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    print(f"store {store.root}: {verb} {len(removed)} entries "
          f"({_mib(sum(e.size for e in removed))}); {_mib(kept)} kept")
    return 0


def sync_remote(store: Store, command: str, url: str | None) -> int:
    """``push``/``pull``: copy entries between the local store and the remote; 0 when every
    entry made it, 1 when the remote failed or refused, 2 for bad usage."""
    import tempfile

    from pipeline.cache.remote import open_remote, remote_config, summary
    from pipeline.errors import UserError

    with tempfile.TemporaryDirectory(prefix="remote-sync-") as state:
        try:
            config = remote_config(url, "write" if command == "push" else "read", Path(state))
        except UserError as error:
            print(f"python -m pipeline.cache {command}: {error}", file=sys.stderr)
            return 2
        if config is None:
            print(f"python -m pipeline.cache {command}: a remote must be given (--remote URL "
                  f"or $ETHOSU_PIPELINE_REMOTE); got none {see('docs/caching.md#remote-store')}",
                  file=sys.stderr)
            return 2
        remote = open_remote(config)
        started = time.perf_counter()
        if command == "push":
            keys = local_keys(store)
            done = sum(remote.upload(store, key) for key in keys)
        else:
            keys = [k for k in remote_keys(remote) if not store.has(k)]
            done = sum(remote.fetch(store, key) for key in keys)
        seconds = time.perf_counter() - started
        print(f"{command}: {done} of {len(keys)} entries in {seconds:.2f} s; "
              f"{summary(config) or 'nothing to copy'}")
        return 0 if done == len(keys) and remote.usable() else 1


def local_keys(store: Store) -> list[str]:
    """The keys of the store's complete entries."""
    return sorted(m.parent.name for m in store.root.glob(f"??/*/{MANIFEST}")
                  if not m.parent.name.startswith(".") and store.has(m.parent.name))


def remote_keys(remote) -> list[str]:
    from pipeline.cache.remote import Off

    try:
        return remote.keys()
    except (Off, FileNotFoundError) as error:
        remote._unreachable(str(error))
        return []


if __name__ == "__main__":
    sys.exit(main())
