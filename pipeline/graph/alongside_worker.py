"""A worker of the side-by-side run checks (``alongside.py``): ``python -m
pipeline.graph.alongside_worker SECONDS`` runs ``run_stage`` on each invocation it is sent."""

from __future__ import annotations

import pickle
import sys

from pipeline.graph.alongside import DONE


def main(argv: list[str]) -> int:
    """Worker: ``run_stage`` on each pickled (invocation, store, where, remote) read from
    stdin (8-byte length, then the pickle), then a line ``<DONE> <0|1>`` (1: the stage
    failed; its own task reports why)."""
    from doit.exceptions import TaskFailed

    from pipeline.graph import timeout
    from pipeline.graph.actions import run_stage

    timeout.configure(argv[0] if argv else None)
    stdin = sys.stdin.buffer
    while len(size := stdin.read(8)) == 8:
        inv, store_root, where, remote_config = pickle.loads(stdin.read(int.from_bytes(size,
                                                                                   "little")))
        try:
            failed = isinstance(run_stage(inv, store_root, where, remote_config), TaskFailed)
        except Exception:  # noqa: BLE001 - a bug: the peer's own task shows its traceback
            failed = True
        print(f"{DONE} {int(failed)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
