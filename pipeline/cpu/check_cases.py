"""The cases of the bare-metal kernel check (``runtime/tosa_cpu/check``): the C file that
CMake's ``TOSA_CPU_CHECK_CASES_C`` names, holding per case a CPU graph, one input and the
output the TOSA reference model gives for it, and the random integer inputs such cases use.

The QEMU ISA tests and ``benchmarks/bench_cpu_kernels.py`` build ``tosa_cpu_check.elf`` from it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipeline.cpu.graph_format import NUMPY

RANGES = {"bool": (0, 1), "int8": (-128, 127), "int16": (-32768, 32767), "int32": (-2**20, 2**20)}


def random_values(shape, dtype: str, seed: int, low: int | None = None,
                  high: int | None = None) -> np.ndarray:
    """Uniform integers of ``dtype`` over its range (int32: +-2**20), or over [low, high]."""
    lo, hi = RANGES[dtype]
    values = np.random.default_rng(seed).integers(lo if low is None else low,
                                                  (hi if high is None else high) + 1, size=shape)
    return values.astype(np.bool_) if dtype == "bool" else values.astype(NUMPY[dtype])


def _c_array(name: str, data: bytes) -> str:
    body = ",".join(str(b) for b in data) or "0"
    return f"static const uint8_t {name}[] __attribute__((aligned(16))) = {{{body}}};\n"


def write_check_cases(cases: dict[str, tuple[bytes, bytes, bytes]], path: Path) -> Path:
    """Write the C file of the check's cases: per case name, the CPU graph, its one input and
    its expected first output, as bytes (``struct TosaCpuCheckCase`` of check_main.cc)."""
    text = ["#include <stdint.h>\n",
            "struct TosaCpuCheckCase { const char* name; const uint8_t* graph; uint32_t "
            "graph_bytes; const uint8_t* input; uint32_t input_bytes; const uint8_t* expected; "
            "uint32_t expected_bytes; };\n"]
    entries = []
    for i, (name, (blob, value, expected)) in enumerate(cases.items()):
        text += [_c_array(f"graph_{i}", blob), _c_array(f"input_{i}", value),
                 _c_array(f"expected_{i}", expected)]
        entries.append(f'{{"{name}", graph_{i}, {len(blob)}, input_{i}, {len(value)}, '
                       f"expected_{i}, {len(expected)}}}")
    text.append("const struct TosaCpuCheckCase tosa_cpu_check_cases[] = {\n  "
                + ",\n  ".join(entries) + "};\n")
    text.append(f"const uint32_t tosa_cpu_check_count = {len(entries)};\n")
    path.write_text("".join(text))
    return path
