#!/usr/bin/env python3
"""What the VGF run check costs against the rest of a VGF build, per example model.

Usage: .venv/bin/python benchmarks/bench_vgf.py [--targets vgf-fp,vgf-int8] [--models add,cnn]
                                                [--shader-cache cold|warm|off] [--keep DIR]

Builds the eight example models (4 calibration and 4 test input sets, min/max observer) for
each VGF target with ``doit build target=...`` in a scratch project with a fresh store, one
target after the other (the int8 build reuses the FP build's exports, as a user's second
target would). Per model it prints the ``vgf`` stage's convert time and ``.vgf`` size, the
``vgf_check`` stage's wall time (from its ``built in`` line) split into the scenario runner's
pipeline build (``load``), its first dispatch (where lavapipe JIT-compiles what its shader
cache lacks) and the TOSA reference model, and ``rest``: the model's other stages of the same
build. The totals line is the issue's measure: run checks against everything else.

``--shader-cache``: ``cold`` (default) gives the run check a fresh, empty Mesa shader cache, as
on a new machine; ``warm`` builds once untimed into a scratch store first, so the timed build
finds every shader compiled (a developer's machine, or CI with the cache restored); ``off``
disables Mesa's cache.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOIT = [sys.executable, "-m", "doit", "-f", str(ROOT / "dodo.py"), "-d", str(ROOT)]
sys.path.insert(0, str(ROOT))
# The same models and calibration as the VGF end-to-end tests: one list.
from tests.e2e.test_vgf_build import CALIBRATION, MODELS  # noqa: E402

TARGETS = {
    "vgf-fp": "{cpu: cortex-a55, tosa: TOSA-1.0+FP, quantization: none, vgf: {}}",
    "vgf-int8": "{cpu: cortex-a55, vgf: {}}",
}
BUILT = re.compile(r"^\s+(\w+):(\S+): built in ([0-9.]+)s", re.MULTILINE)
SIDE_BY_SIDE = re.compile(r"^\s+vgf_check: \d+ side by side in ([0-9.]+)s wall", re.MULTILINE)


def targets_yaml(models: list[str]) -> str:
    lines = ["models:"]
    lines += [f"  {m}: {{source: {MODELS[m]}, calibration: {CALIBRATION}}}" for m in models]
    lines += ["defaults:", f"  models: [{', '.join(models)}]", "targets:"]
    lines += [f"  {name}: {spec}" for name, spec in TARGETS.items()]
    return "\n".join(lines) + "\n"


def build(project: Path, store: Path, target: str, env: dict) -> tuple[float, str]:
    argv = [*DOIT, "build", f"target={target}", f"targets={project / 'targets.yaml'}",
            f"store={store}"]
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench_vgf: {' '.join(argv)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr}")
    return time.perf_counter() - started, proc.stdout


def stage_seconds(log: str, models: list[str]) -> dict[str, dict[str, float]]:
    """Per model, per stage: the seconds of its ``built in`` lines (a task's name starts with
    ``stage:model`` or ``stage:model/...``)."""
    per: dict[str, dict[str, float]] = {m: {} for m in models}
    for stage, name, seconds in BUILT.findall(log):
        model = name.split("/")[0]
        if model in per:
            per[model][stage] = per[model].get(stage, 0.0) + float(seconds)
    return per


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--shader-cache", choices=("cold", "warm", "off"), default="cold")
    parser.add_argument("--keep", type=Path, help="build here and keep it (default: a temp dir)")
    args = parser.parse_args()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = [m for m in models if m not in MODELS] + [t for t in targets if t not in TARGETS]
    if unknown:
        sys.exit(f"bench_vgf: unknown model or target {unknown}; know {list(MODELS)} and "
                 f"{list(TARGETS)}")

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-vgf-"))
    work.mkdir(parents=True, exist_ok=True)
    project = work / "project"
    for old in (project, work / "store", work / "warm-store"):  # a fresh start, kept or not
        shutil.rmtree(old, ignore_errors=True)
    project.mkdir()
    shutil.copytree(ROOT / "models", project / "models")
    (project / "targets.yaml").write_text(targets_yaml(models))
    env = dict(os.environ)
    shader_cache = work / "mesa-shader-cache"
    shutil.rmtree(shader_cache, ignore_errors=True)
    if args.shader_cache == "off":
        env["MESA_SHADER_CACHE_DISABLE"] = "true"
    else:
        env["MESA_SHADER_CACHE_DIR"] = str(shader_cache)
    if args.shader_cache == "warm":
        print("warming the shader cache (untimed build into a scratch store) ...", flush=True)
        for target in targets:
            build(project, work / "warm-store", target, env)
        shutil.rmtree(project / "build")
    load = subprocess.run(["cat", "/proc/loadavg"], capture_output=True, text=True).stdout
    print(f"models: {', '.join(models)}; shader cache: {args.shader_cache}; "
          f"load average before: {load.split()[0]}")

    for target in targets:
        store = work / "store"
        wall, log = build(project, store, target, env)
        (work / f"{target}.log").write_text(log)
        report = json.loads((project / "build" / target / "report.json").read_text())
        per = stage_seconds(log, models)
        print(f"\n{target}: doit build {wall:.1f} s wall")
        print(f"{'model':14} {'.vgf KiB':>9} {'convert':>8} | {'check':>6} {'load':>6} "
              f"{'1st run':>7} {'ref':>5} | {'rest':>6}")
        totals = {"check": 0.0, "rest": 0.0}
        for model in models:
            entry = report["models"][model]
            figures = entry["vgf"]
            timing = entry["run_check"]["timing"]
            check = per[model].get("vgf_check", 0.0)
            rest = sum(s for stage, s in per[model].items() if stage != "vgf_check")
            totals["check"] += check
            totals["rest"] += rest
            print(f"{model:14} {figures['vgf_bytes'] / 1024:9.1f} "
                  f"{figures['convert_seconds']:7.2f}s | {check:5.1f}s "
                  f"{timing['load_seconds']:5.2f}s {timing.get('first_run_seconds', 0):6.2f}s "
                  f"{timing['reference_model_seconds']:4.2f}s | {rest:5.1f}s")
        share = totals["check"] / totals["rest"] if totals["rest"] else float("inf")
        print(f"{'total':14} {'':>9} {'':>8} | {totals['check']:5.1f}s {'':>6} {'':>7} "
              f"{'':>5} | {totals['rest']:5.1f}s   run checks = {share:.0%} of the rest "
              f"(seconds of work)")
        side = SIDE_BY_SIDE.findall(log)
        if side:  # the checks ran side by side in the first vgf_check task: its wall time
            wall_checks = sum(map(float, side))
            print(f"{'':14} {'':>9} {'':>8} | {wall_checks:5.1f}s wall, side by side "
                  f"{'':>4} | {totals['rest']:5.1f}s   run checks = "
                  f"{wall_checks / totals['rest']:.0%} of the rest (wall time)")
    print(f"\nlogs and builds in {work}" if args.keep else "")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
