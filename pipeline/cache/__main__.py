"""``python -m pipeline.cache verify|gc``: check or trim the artifact store."""

from __future__ import annotations

import argparse
import sys
import time

from pipeline.cache.maintenance import gc_store, parse_age, parse_size, verify_store
from pipeline.cache.store import Store


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 damaged entries, 2 bad usage)."""
    from pipeline.graph.project import store_root

    parser = argparse.ArgumentParser(prog="python -m pipeline.cache",
                                     description="Check or trim the content-addressed store.")
    parser.add_argument("--store", help="store folder (default: $ETHOSU_PIPELINE_STORE, else "
                                        "~/.cache/ethosu-pipeline/store)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("verify", help="check every entry's checksums; quarantine bad ones")
    gc = commands.add_parser("gc", help="remove entries by age and/or to a size budget, "
                                        "least recently used first")
    gc.add_argument("--max-size", help="keep at most this much, e.g. 2G, 500M")
    gc.add_argument("--older-than", help="remove entries unused for this long, e.g. 30d, 12h")
    gc.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")
    args = parser.parse_args(argv)
    store = Store(store_root(args.store))
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
              "neither", file=sys.stderr)
        return 2
    removed, kept = gc_store(store, max_size, older_than, args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    print(f"store {store.root}: {verb} {len(removed)} entries "
          f"({_mib(sum(e.size for e in removed))}); {_mib(kept)} kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
