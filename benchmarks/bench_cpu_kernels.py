#!/usr/bin/env python3
"""CPU kernel figures: whole example networks (int8) on the Cortex-M kernel variants.

Usage: .venv/bin/python benchmarks/bench_cpu_kernels.py [--models ds_cnn,resnet8] [--out DIR]

Per network: quantize -> lower (the compile chain, ``pipeline.chain.run``) -> CPU graph, one
random input, the TOSA reference model's output; then tosa_cpu_check.elf
(runtime/tosa_cpu/check) built per variant - Cortex-M55 portable and MVE (qemu -M
mps3-an547, 32 MHz SysTick), Cortex-M4 portable and DSP (-M mps2-an386) - runs every network
under `qemu -icount shift=0` (each instruction 1 ns of virtual time), checks its output
bit-exact and reports the instructions of one inference: its SysTick ticks times the
instructions per tick the firmware measures first on a loop of exactly 2,000,000
instructions. Also: text bytes of libtosa_cpu.a per variant, and each network's arena
against the sum of its tensors.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# name: (cpu, isa, TOSA_CPU_KERNELS, QEMU machine, check board)
VARIANTS = {
    "m55-portable": ("cortex-m55", "mve", "portable", "mps3-an547", "mps3_an547"),
    "m55-mve": ("cortex-m55", "mve", "auto", "mps3-an547", "mps3_an547"),
    "m4-portable": ("cortex-m4", "dsp", "portable", "mps2-an386", "mps2"),
    "m4-dsp": ("cortex-m4", "dsp", "auto", "mps2-an386", "mps2"),
}
DEFAULT_MODELS = "ds_cnn,resnet8,mobilenet_v1,autoencoder,mobilenet_v2,transformer_block"


def _run(argv: list, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=True,
                          **kwargs)


def prepare(models: list[str], out: Path) -> tuple[dict, dict]:
    from models.cases import INT8, SPECS, case_inputs
    from models.cases.networks import network
    from pipeline.chain.run import compile_model
    from pipeline.cpu.check_cases import random_values
    from pipeline.cpu.graph_format import encode
    from pipeline.verify.reference_model import run_reference_model

    cases, infos = {}, {}
    for name in models:
        model = network(name)()
        example, calibration, tests = case_inputs(model.example_shapes)
        compiled = compile_model(model, example, calibration, tests, out / name, scheme=INT8,
                                 spec=SPECS[INT8], check=False, where=name)
        tosa = compiled.folder / "model.tosa"
        blob, info = encode(tosa)
        (tensor,) = info.inputs
        value = random_values(tensor.shape, tensor.dtype, seed=1)
        names = [t.name for t in info.outputs]
        expected = run_reference_model(tosa, {tensor.name: value}, names)[names[0]]
        cases[name] = (blob, value.tobytes(), expected.tobytes())
        infos[name] = info
    return cases, infos


def build(variant: str, cases_c: Path, out: Path) -> Path:
    cpu, isa, kernels, _, board = VARIANTS[variant]
    folder = out / f"fw-{variant}"
    _run(["cmake", "-G", "Ninja", "-S", ROOT / "runtime", "-B", folder,
          f"-DCMAKE_TOOLCHAIN_FILE={ROOT / 'cmake/toolchains/arm-none-eabi-gcc.cmake'}",
          "-DETHOSU_RT_PLATFORM=cortex_m", f"-DETHOSU_RT_CPU={cpu}", f"-DETHOSU_RT_ISA={isa}",
          f"-DTOSA_CPU_KERNELS={kernels}", f"-DTOSA_CPU_CHECK_CASES_C={cases_c}",
          f"-DTOSA_CPU_CHECK_BOARD={board}", "-DCMAKE_BUILD_TYPE=Release",
          "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"])
    _run(["cmake", "--build", folder, "--target", "tosa_cpu_check"])
    return folder


def measure(variant: str, folder: Path) -> dict[str, float | None]:
    """Instructions of one run of each case (None: not bit-exact or not run)."""
    machine = VARIANTS[variant][3]
    result = subprocess.run(
        ["qemu-system-arm", "-M", machine, "-icount", "shift=0", "-nographic", "-monitor", "none",
         "-semihosting-config", "enable=on,target=native", "-kernel",
         str(folder / "bin" / "tosa_cpu_check.elf")],
        capture_output=True, text=True, timeout=3600)
    console = result.stdout + result.stderr
    per_tick = 2e6 / int(re.search(r"calibration: (\d+) ticks per 2000000", console).group(1))
    counts = {}
    for line in console.splitlines():
        found = re.match(r"(\w+): (bit-exact \((\d+) ticks\)|.*)$", line)
        if found and not line.startswith(("tosa_cpu_check", "calibration")):
            counts[found.group(1)] = int(found.group(3)) * per_tick if found.group(3) else None
    return counts


def text_bytes(folder: Path) -> int:
    size = _run(["arm-none-eabi-size", "-t", folder / "lib" / "libtosa_cpu.a"]).stdout
    return int(size.strip().splitlines()[-1].split()[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=DEFAULT_MODELS,
                        help="comma-separated example networks (default: all six)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "bench_cpu",
                        help="where the graphs and firmware builds go")
    args = parser.parse_args()
    from pipeline.cpu.check_cases import write_check_cases

    args.out.mkdir(parents=True, exist_ok=True)
    cases, infos = prepare(args.models.split(","), args.out)
    cases_c = write_check_cases(cases, args.out / "cases.c")
    results, sizes = {}, {}
    for variant in VARIANTS:
        folder = build(variant, cases_c, args.out)
        sizes[variant] = text_bytes(folder)
        results[variant] = measure(variant, folder)
    print("| network | arena B | sum of tensors B | "
          + " | ".join(f"{v} Minstr" for v in VARIANTS) + " | M55 portable/MVE | M4 portable/DSP |")
    print("|---|---:|---:|" + "---:|" * (len(VARIANTS) + 2))
    for name in cases:
        cells = []
        instructions = {}
        for variant in VARIANTS:
            instructions[variant] = results[variant].get(name)
            cells.append("MISMATCH" if instructions[variant] is None
                         else f"{instructions[variant] / 1e6:.2f}")

        def ratio(a, b):
            x, y = instructions[a], instructions[b]
            return f"{x / y:.2f}x" if x and y else "-"

        info = infos[name]
        print(f"| {name} | {info.arena_bytes:,} | {info.tensor_bytes:,} | " + " | ".join(cells)
              + f" | {ratio('m55-portable', 'm55-mve')} | {ratio('m4-portable', 'm4-dsp')} |")
    print()
    print("libtosa_cpu.a text bytes (Release: conv.cc -O2 but for its rarely used and "
          "replaced loops, the rest -Os): "
          + ", ".join(f"{v} {b:,}" for v, b in sizes.items()))
    failed = [(v, n) for v, r in results.items() for n in cases if r.get(n) is None]
    if failed:
        print(f"not bit-exact or not run: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
