#!/usr/bin/env python3
"""Cost of the CPU kernels (npu: null) per model and per operator, as instructions retired
under QEMU with ``-icount`` (deterministic), for Cortex-M55 portable (``isa: scalar``), DSP
and MVE and Cortex-M4 (DSP); code size of the kernel library + runtime linked into the
firmware; the arena the static plan needs vs the sum of all activation sizes.

Usage: .venv/bin/python benchmarks/bench_cpu.py [--models a,b] [--json OUT] [--store DIR]

It writes ``build/bench_cpu/targets.yaml`` (one CPU-only target per CPU/ISA, the MLPerf Tiny
models by default), runs ``doit build`` there (so every firmware is also verified bit-exact
against the TOSA reference model), then boots each firmware with ``--profile`` under
``qemu-system-arm -icount shift=0``: the runner times each operator with SysTick and a
calibration loop of exactly 2,000,000 instructions converts ticks to instructions. Code
size: the code and read-only data of the ``tosa_cpu::`` and ``ethosu_rt::`` symbols the
firmware keeps (``arm-none-eabi-nm -S``), i.e. what the model's operators pull in.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS = ["ds_cnn", "resnet8", "mobilenet_v1", "autoencoder", "mobilenet_v2", "transformer"]
# name -> (cpu, isa, QEMU machine)
VARIANTS = {
    "m55-mve": ("cortex-m55", "mve", "mps3-an547"),
    "m55-dsp": ("cortex-m55", "dsp", "mps3-an547"),
    "m55-scalar": ("cortex-m55", "scalar", "mps3-an547"),
    "m4-dsp": ("cortex-m4", "dsp", "mps2-an386"),
}


def targets_yaml(models: list[str]) -> str:
    text = (ROOT / "targets.yaml").read_text()
    block = text[text.index("\nmodels:") + 1:text.index("\ndefaults:") + 1]
    block = block.replace("source: models/", f"source: {ROOT}/models/")
    lines = [block, "defaults:", f"  models: [{', '.join(models)}]", "  npu: null", "targets:"]
    lines += [f"  {name}: {{cpu: {cpu}, isa: {isa}}}" for name, (cpu, isa, _) in VARIANTS.items()]
    return "\n".join(lines) + "\n"


def profile(elf: Path, machine: str) -> dict:
    """Per operator and total instructions of one firmware run (zero inputs)."""
    argv = ["qemu-system-arm", "-M", machine, "-icount", "shift=0", "-nographic", "-monitor",
            "none", "-semihosting-config", "enable=on,target=native,arg=r,arg=--profile",
            "-kernel", str(elf)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=True).stdout
    per_tick = 2_000_000 / int(re.search(r"calibration: 2000000 instructions in (\d+)", out)[1])
    ops = [(name, round(int(ticks) * per_tick))
           for name, ticks in re.findall(r"^op \d+ (\S+): (\d+) ticks", out, re.MULTILINE)]
    return {"total": sum(n for _, n in ops), "ops": ops}


def code_size(elf: Path) -> int:
    """Bytes of code and read-only data in the firmware from the runtime's own namespaces
    (``tosa_cpu::``: the kernel library; ``ethosu_rt::``: artifact, IO, quantization, the
    CPU model), after the linker dropped what the model's operators do not use."""
    out = subprocess.run(["arm-none-eabi-nm", "-C", "-S", "--size-sort", str(elf)],
                         capture_output=True, text=True, check=True).stdout
    total = 0
    for line in out.splitlines():
        parts = line.split(maxsplit=3)
        if len(parts) == 4 and parts[2] in "tTrR" and re.search(r"\b(tosa_cpu|ethosu_rt)::",
                                                               parts[3]):
            total += int(parts[1], 16)
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated models of targets.yaml (default: MLPerf Tiny)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--store", default="", help="the store of the build (default: its own)")
    args = parser.parse_args()
    models = args.models.split(",")
    work = ROOT / "build" / "bench_cpu"
    work.mkdir(parents=True, exist_ok=True)
    (work / "targets.yaml").write_text(targets_yaml(models))
    argv = [sys.executable, "-m", "doit", "-f", str(ROOT / "dodo.py"), "-d", str(ROOT), "build",
            f"targets={work / 'targets.yaml'}", f"build={work / 'build'}"]
    if args.store:
        argv.append(f"store={args.store}")
    subprocess.run(argv, check=True)
    results = {}
    for target, (_, _, machine) in VARIANTS.items():
        report = json.loads((work / "build" / target / "report.json").read_text())
        for model in models:
            entry = report["models"][model]
            elf = Path(entry["firmware"])
            results.setdefault(model, {})[target] = {
                **profile(elf, machine), "code_bytes": code_size(elf),
                "arena_bytes": entry["cpu"]["arena_bytes"],
                "tensor_bytes": entry["cpu"]["tensor_bytes"],
                "verified": entry["cpu"]["verify"]["passed"]}
    print_tables(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def print_tables(results: dict) -> None:
    names = list(VARIANTS)
    print("\n| model | " + " | ".join(f"{n} instructions" for n in names)
          + " | scalar / MVE | arena B | sum of tensors B |")
    print("|---|" + "---|" * (len(names) + 3))
    for model, row in results.items():
        first = row[names[0]]
        ratio = row["m55-scalar"]["total"] / max(row["m55-mve"]["total"], 1)
        print(f"| {model} | " + " | ".join(f"{row[n]['total']:,}" for n in names)
              + f" | {ratio:.2f}x | {first['arena_bytes']:,} | {first['tensor_bytes']:,} |")
    print("\n| ISA | tosa_cpu:: + ethosu_rt:: code and rodata in the firmware (largest model) |")
    print("|---|---|")
    for n in names:
        sizes = [row[n]["code_bytes"] for row in results.values() if row[n]["code_bytes"]]
        print(f"| {n} | {max(sizes, default=0):,} B |")
    ops: dict[str, dict[str, int]] = {}
    for row in results.values():
        for n in names:
            for name, count in row[n]["ops"]:
                ops.setdefault(name, dict.fromkeys(names, 0))[n] += count
    print("\n| operator (all models) | " + " | ".join(names) + " | scalar / MVE |")
    print("|---|" + "---|" * (len(names) + 1))
    for name, counts in sorted(ops.items(), key=lambda kv: -kv[1]["m55-scalar"]):
        ratio = counts["m55-scalar"] / max(counts["m55-mve"], 1)
        print(f"| {name} | " + " | ".join(f"{counts[n]:,}" for n in names) + f" | {ratio:.2f}x |")


if __name__ == "__main__":
    sys.exit(main())
