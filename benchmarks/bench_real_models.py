#!/usr/bin/env python3
"""Build real model families for every target of a targets file and print what happened.

Usage: .venv/bin/python benchmarks/bench_real_models.py [--targets models/zoo/targets.yaml]
           [--models bert,resnet18] [--json OUT]

Per model, through the build's own stage invocations (export -> quantize -> lower -> verify ->
Vela -> package, no store): built or the first blocker (stage and message), verification,
SQNR of the integer graph and of torch's quantized graph against float, NPU cycles, NPU
operator share, SRAM and flash per NPU, and the cold time. Ends with the share of models that
built for every target.
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


def main() -> int:
    from models.zoo.runner import ZOO, build_model, model_names

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=Path, default=ZOO, help="a targets.yaml")
    parser.add_argument("--models", help="comma-separated; default: every model the targets build")
    parser.add_argument("--json", type=Path, help="also write every result as JSON")
    args = parser.parse_args()
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
