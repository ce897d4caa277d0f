#!/usr/bin/env python3
"""Build real model families for every target of a targets file and print what happened.

Usage: .venv/bin/python benchmarks/bench_real_models.py [--targets models/zoo/targets.yaml]
           [--models bert,resnet18] [--json OUT] [--results IN]
           [--check-cycles | --update-cycles] [--baseline benchmarks/zoo_cycles.json]
           [--tolerance PCT]

Per model, through the build's own stage invocations (export -> quantize -> lower -> verify ->
Vela -> package, no store): built or the first blocker (stage and message), verification,
SQNR of the integer graph and of torch's quantized graph against float, NPU cycles, NPU
operator share, SRAM and flash per NPU, and the cold time. Ends with the share of models that
built for every target.

Cycle check (``benchmarks/zoo_cycles.py``): ``--check-cycles`` compares each model's NPU
cycles per NPU config with the baseline checked into the repository and exits 1, one line per
row, when any model got slower than its baseline by more than the tolerance or no longer
builds; ``--update-cycles`` rewrites the baseline's rows of the models run. ``--results``
reads the results of an earlier ``--json`` run instead of building again.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _db(value) -> str:
    return "inf" if value is None else f"{value:.1f}"


def _sqnr(verify: dict | None) -> tuple[str, str]:
    if not verify:
        return "-", "-"
    outputs = [o for o in verify.get("outputs", []) if "sqnr_db_vs_float" in o]
    if not outputs:
        return "-", "-"
    worst = min(outputs, key=lambda o: -1e9 if o["sqnr_db_vs_float"] is None else o["sqnr_db_vs_float"])
    return _db(worst["sqnr_db_vs_float"]), _db(worst.get("sqnr_db_torch_quantized_vs_float"))


def row(name: str, result: dict, seconds: float) -> str:
    sqnr, sqnr_torch = _sqnr(result["verify"])
    verify = result["verify"]
    status = "built" if result["blocker"] is None else f"BLOCKED ({result['stage']})"
    checked = "-" if verify is None else ("pass" if verify.get("passed") else "FAIL")
    cells = [name, status, checked, sqnr, sqnr_torch]
    for config, figures in sorted(result["vela"].items()):
        flash = figures["off_chip_flash_memory_used"] or figures["on_chip_flash_memory_used"]
        cells.append(f"{config}: {figures['cycles_npu']:,} cyc, {figures['npu_op_share']:.0%} NPU, "
                     f"SRAM {figures['sram_memory_used']:.0f} KiB, flash {flash:.0f} KiB")
    cells.append(f"{seconds:.1f} s")
    return "| " + " | ".join(cells) + " |"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from benchmarks.zoo_cycles import BASELINE

    zoo = ROOT / "models" / "zoo" / "targets.yaml"
    parser = argparse.ArgumentParser(prog="bench_real_models.py",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=Path, default=zoo, help="a targets.yaml")
    parser.add_argument("--models", help="comma-separated; default: every model the targets build")
    parser.add_argument("--json", type=Path, help="also write every result as JSON")
    parser.add_argument("--results", type=Path,
                        help="read the results of an earlier --json run instead of building")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check-cycles", action="store_true",
                      help="exit 1, one line per row, when a model's NPU cycles on an NPU "
                      "exceed the baseline by more than --tolerance, or it no longer builds")
    mode.add_argument("--update-cycles", action="store_true",
                      help="rewrite the baseline's rows of the models run with this run's cycles")
    parser.add_argument("--baseline", type=Path, default=BASELINE,
                        help=f"the cycle baseline (default {BASELINE.relative_to(ROOT)})")
    parser.add_argument("--tolerance", type=float,
                        help="percent a row may exceed its baseline (default: the baseline's "
                        "tolerance_pct, else 1.0)")
    return parser.parse_args(argv)


def cycle_check(args: argparse.Namespace, results: dict) -> int:
    """--check-cycles / --update-cycles over ``results``; the exit status."""
    from importlib.metadata import version

    from benchmarks import zoo_cycles

    baseline = zoo_cycles.load(args.baseline)
    vela = version("ethos-u-vela")
    if args.update_cycles:
        zoo_cycles.write(args.baseline, zoo_cycles.updated(baseline, results, vela))
        print(f"\ncycle baseline: {args.baseline} rewritten for {len(results)} model(s)")
        return 0
    tolerance = (args.tolerance if args.tolerance is not None
                 else baseline.get("tolerance_pct", zoo_cycles.DEFAULT_TOLERANCE_PCT))
    if baseline.get("vela") not in (None, vela):
        print(f"\nnote: the baseline was recorded with Vela {baseline['vela']}; this is {vela}: "
              "rerun with --update-cycles once the change is reviewed")
    verdict = zoo_cycles.check(baseline, results, tolerance)
    for note in verdict.notes:
        print(f"note: {note}")
    for line in verdict.regressed:
        print(f"REGRESSED {line}")
    checked = sum(len(baseline["cycles"].get(n, {})) for n in results)
    print(f"cycle check against {args.baseline}: {len(verdict.regressed)} of {checked} "
          f"(model, NPU) rows slower than the baseline by more than {tolerance:g}%")
    return 1 if verdict.regressed else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.results:
        results = json.loads(args.results.read_text())
        if args.models:
            results = {n: results[n] for n in args.models.split(",") if n in results}
        return cycle_check(args, results) if args.check_cycles or args.update_cycles else 0

    from models.zoo.runner import build_model, model_names

    names = args.models.split(",") if args.models else model_names(args.targets)
    print("| model | result | verify | SQNR int vs float (dB) | SQNR torch-q vs float (dB) "
          "| per NPU | cold time |")
    print("|---|---|---|---|---|---|---|")
    results, built = {}, 0
    for name in names:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="bench-real-") as build:
            result = build_model(name, Path(build), args.targets)
        seconds = time.perf_counter() - started
        results[name] = {**result, "cold_seconds": seconds}
        built += result["blocker"] is None
        print(row(name, result, seconds), flush=True)
    for name, result in results.items():
        if result["blocker"]:
            print(f"\n{name}: {result['blocker']}")
    print(f"\nbuilt for every target: {built} of {len(names)} ({built / max(1, len(names)):.0%})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    if args.check_cycles or args.update_cycles:
        return cycle_check(args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
