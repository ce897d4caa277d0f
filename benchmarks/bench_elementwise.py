#!/usr/bin/env python3
"""NPU cycles of the elementwise operators (TABLE family, rounding, division, integer ops) on
Ethos-U55-128 and Ethos-U85-256 at one shape.

Usage: .venv/bin/python benchmarks/bench_elementwise.py [--dtype int8|a16w8] [--only a,b]

Each case of ``models/cases/elementwise.py`` (a module as users write it, 1x16x16x16
inputs) is quantized (integer-tensor cases are not), lowered, verified against torch (max
|diff| in output LSBs over the layers and outputs) and compiled by Vela for each NPU from
that NPU's variant of the graph (the compile chain, ``pipeline.chain.run``); a row per case:
the U55 variant's TOSA operators, cycles and NPU operator share per NPU, or the reason it
does not compile.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def measure(module, specs, dtype: str, folder: Path) -> dict:
    from npu_cycles import compile_case, compile_on_npus, max_diff

    from pipeline.tosa.flatbuffer import operator_names

    compiled = compile_case(module, specs, dtype, folder / "case")
    report = compiled.verify()
    ops = [o for o in operator_names(compiled.variant("u55")) if not o.startswith("CONST")]
    row = {"ops": ops, "max_diff": max_diff(report), "passed": report["passed"]}
    for accelerator, result in compile_on_npus(compiled, folder).items():
        row[accelerator] = (
            f"{result['cycles']} ({result['share']:.0%})"
            if "cycles" in result
            else f"refused: {result['error'][:40]}"
        )
    return row


def main() -> None:
    from npu_cycles import ACCELERATORS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="int8", choices=("int8", "a16w8"),
                        help="quantization scheme")
    parser.add_argument("--only", default="", help="comma-separated case names")
    args = parser.parse_args()
    from models.cases.elementwise import integer_cases, quantized_cases

    cases = {n: (m, s) for n, (m, s) in quantized_cases().items()}
    cases.update({n: (m, s) for n, (m, s, _) in integer_cases().items()})
    only = set(filter(None, args.only.split(",")))
    print(f"{'operator':<27} {'max|d|':>6} {'U55-128 cycles':>16} {'U85-256 cycles':>16}  "
          "U55 variant TOSA operators")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-elementwise-") as tmp:
        for name, (module, specs) in cases.items():
            if only and name not in only:
                continue
            try:
                row = measure(module, specs, args.dtype, Path(tmp) / name)
            except Exception as exc:
                print(f"{name:<27} failed: {type(exc).__name__}: {str(exc)[:90]}")
                continue
            ops = "+".join(row["ops"]) if len(row["ops"]) <= 6 else f"{len(row['ops'])} operators"
            print(f"{name:<27} {row['max_diff']:>6} {row[ACCELERATORS[0]]:>16} "
                  f"{row[ACCELERATORS[1]]:>16}  {ops}")  # fmt: skip


if __name__ == "__main__":
    main()
