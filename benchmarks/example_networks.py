#!/usr/bin/env python3
"""Compile the example networks for Ethos-U55-128 and -U85-256 and print their figures.

Usage: .venv/bin/python benchmarks/example_networks.py [--models ds_cnn,resnet8] [--json OUT]

Per model: export -> quantize (int8) -> lower -> verify in the TOSA reference model -> Vela
with the targets' default system config and memory mode (``models/cases/networks.py``: the
compile chain of ``pipeline.chain.run``, 16 calibration and 8 test input sets). Prints one
Markdown table row per model x NPU: NPU/total cycles, inference time, SRAM and flash use,
NPU operator share, verify exact-match fraction, max integer difference and SQNR against
the float model.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CALIBRATION_SAMPLES, TEST_SAMPLES = 16, 8


def table_rows(name: str, result: dict) -> list[str]:
    output = result["verify"]["outputs"][0]
    sqnr = output["sqnr_db_vs_float"]
    rows = []
    for accelerator, f in result["vela"].items():
        flash = f["off_chip_flash_memory_used"] or f["on_chip_flash_memory_used"]
        rows.append(
            f"| {name} | {accelerator} | {f['cycles_npu']} / {f['cycles_total']} | "
            f"{f['inference_time'] * 1e3:.3f} ms | {f['sram_memory_used']:.1f} KiB | "
            f"{flash:.1f} KiB | {f['npu_operators']}/{f['npu_operators'] + f['cpu_operators']} "
            f"({f['npu_op_share']:.0%}) | {output['exact_match_fraction']:.3f} | "
            f"{output['max_abs_diff_int']} | "
            f"{'inf' if sqnr is None else f'{sqnr:.1f}'} dB |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated; default: every example network")
    parser.add_argument("--json", type=Path, help="also write every result here")
    args = parser.parse_args()
    from models.cases.networks import NETWORKS, compile_network

    print(
        "| model | NPU | NPU / total cycles | inference | SRAM | flash | NPU ops | exact match "
        "| max int diff | SQNR vs float |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    results = {}
    with tempfile.TemporaryDirectory(prefix="networks-") as tmp:
        for name in args.models.split(",") if args.models else NETWORKS:
            results[name] = compile_network(name, Path(tmp) / name,
                                            calibration=CALIBRATION_SAMPLES, tests=TEST_SAMPLES)
            print("\n".join(table_rows(name, results[name])), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
