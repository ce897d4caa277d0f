#!/usr/bin/env python3
"""Time the build graph on the shipped targets: cold, no-op, A->B->A switch, store restore.

Usage: .venv/bin/python benchmarks/bench_build.py [--targets u85-linux,u55-baremetal] [--keep DIR]
       .venv/bin/python benchmarks/bench_build.py --scale 4,50,200 [--store DIR] [--keep DIR]

Runs in a scratch copy of targets.yaml and models/ with a fresh store, so nothing of the
user's build or cache is touched. Prints one line per measurement (seconds, wall clock).

``--scale N,...`` instead generates N targets over every model of targets.yaml (the
accelerators x both Vela optimise strategies, repeated: 22 distinct NPU configurations), builds
them once, then prints the no-op build time against the number of targets and tasks, so the
growth of the graph's fixed cost is visible. ``--store DIR`` keeps the store between runs (the
cold build is then a restore).
"""

from __future__ import annotations

import argparse
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


STORE: Path | None = None  # --store; else <project>/store


def doit(project: Path, *args: str) -> tuple[float, str]:
    """Run doit on the scratch project; return (seconds, output)."""
    argv = [*DOIT, *args, f"targets={project / 'targets.yaml'}",
            f"store={STORE or project / 'store'}"]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"benchmark: {' '.join(argv)} failed:\n{proc.stdout}\n{proc.stderr}")
    return elapsed, proc.stdout


def ran(output: str) -> int:
    """How many tasks doit executed (lines '.  name'), as opposed to '-- name' (up to date)."""
    return len(re.findall(r"^\.  ", output, re.MULTILINE))


def switch_npu(path: Path, target: str) -> tuple[str, str]:
    """Rewrite the targets file so ``target`` uses another accelerator of the same family."""
    import yaml

    from pipeline.config import load_config

    before = load_config(path).targets[target].npu.config
    after = {"ethos-u85-256": "ethos-u85-512"}.get(before, "ethos-u85-256")
    data = yaml.safe_load(path.read_text())
    npu = dict(data["targets"][target].get("npu") or {})
    data["targets"][target]["npu"] = {**npu, "config": after}
    if not before.startswith("ethos-u85"):  # a U55/U65 memory mode may not suit an U85
        data["targets"][target]["npu"].pop("memory_mode", None)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return before, after


ACCELERATORS = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256",
                "ethos-u65-256", "ethos-u65-512", "ethos-u85-128", "ethos-u85-256",
                "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048")


def scaled_targets(count: int) -> str:
    """A targets file of ``count`` targets building every model of the shipped targets.yaml."""
    import yaml

    shipped = yaml.safe_load((ROOT / "targets.yaml").read_text())
    targets = {}
    for i in range(count):
        accelerator = ACCELERATORS[i % len(ACCELERATORS)]
        optimise = ("Performance", "Size")[i // len(ACCELERATORS) % 2]
        targets[f"t{i:04d}"] = {
            "description": f"scale target {i}: {accelerator}, optimise {optimise}",
            "cpu": "cortex-m55" if "u55" in accelerator else "cortex-m85",
            "npu": {"config": accelerator, "optimise": optimise},
            "models": list(shipped["models"]),
        }
    data = {"models": shipped["models"], "defaults": shipped["defaults"], "targets": targets}
    return yaml.safe_dump(data, sort_keys=False)


def noop_seconds(project: Path, repeat: int) -> tuple[float, int]:
    """Best no-op build time of ``repeat`` runs and the number of tasks doit looked at."""
    best, tasks = float("inf"), 0
    for _ in range(repeat):
        seconds, out = doit(project, "build")
        if ran(out):
            sys.exit(f"benchmark: the no-op build ran {ran(out)} tasks:\n{out}")
        best = min(best, seconds)
        tasks = len(re.findall(r"^-- ", out, re.MULTILINE))
    return best, tasks


def scale(counts: list[int], project: Path, repeat: int) -> None:
    """Print the no-op build time against the number of targets."""
    print(f"{'targets':>8} {'tasks':>6} {'cold/restore s':>15} {'no-op s':>8}")
    for count in counts:
        (project / "targets.yaml").write_text(scaled_targets(count))
        cold, _ = doit(project, "build")
        seconds, tasks = noop_seconds(project, repeat)
        print(f"{count:8d} {tasks:6d} {cold:15.2f} {seconds:8.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="u85-linux,u55-baremetal,u85-baremetal,tosa-ref",
                        help="comma-separated shipped targets to build")
    parser.add_argument("--keep", type=Path, help="keep the scratch project here")
    parser.add_argument("--scale", help="comma-separated target counts: no-op time per count")
    parser.add_argument("--store", type=Path, help="the store to use (default: a fresh one)")
    parser.add_argument("--repeat", type=int, default=5, help="no-op runs per count (best kept)")
    args = parser.parse_args()
    project = args.keep or Path(tempfile.mkdtemp(prefix="bench-build-"))
    project.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "models", project / "models", dirs_exist_ok=True)
    global STORE
    STORE = args.store.resolve() if args.store else None
    if args.scale:
        scale([int(n) for n in args.scale.split(",")], project, args.repeat)
        if not args.keep:
            shutil.rmtree(project)
        return
    yaml_a = (ROOT / "targets.yaml").read_text()
    (project / "targets.yaml").write_text(yaml_a)
    target = f"target={args.targets}"

    rows = []
    seconds, out = doit(project, "build", target)
    rows.append(("cold build", seconds, ran(out)))
    seconds, out = doit(project, "build", target)
    rows.append(("no-op rebuild", seconds, ran(out)))
    first = args.targets.split(",")[0]
    before, after = switch_npu(project / "targets.yaml", first)
    seconds, out = doit(project, "build", f"target={first}")
    rows.append((f"switch A->B ({first}: {before} -> {after})", seconds, ran(out)))
    (project / "targets.yaml").write_text(yaml_a)
    seconds, out = doit(project, "build", f"target={first}")
    rows.append(("switch B->A (back)", seconds, ran(out)))
    shutil.rmtree(project / "build")
    seconds, out = doit(project, "build", target)
    rows.append(("rm -rf build; restore all from store", seconds, ran(out)))

    print(f"targets: {args.targets}")
    print(f"{'measurement':58} {'seconds':>8} {'tasks run':>10}")
    for name, secs, count in rows:
        print(f"{name:58} {secs:8.2f} {count:10d}")
    if not args.keep:
        shutil.rmtree(project)


if __name__ == "__main__":
    main()
