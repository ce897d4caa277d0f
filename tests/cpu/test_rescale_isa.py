"""The ISA variants of RESCALE (apply_scale_32 without a 64-bit product per value: MVE and
NEON from vqdmulh/vqrdmulh and vrshl, DSP from SMULL, QADD and SSAT; runtime/tosa_cpu/src/
scale.cc) under QEMU - Cortex-M55 MVE, Cortex-M4 DSP and AArch64 NEON
(qemu-aarch64) - bit-exact over their edge
cases: every shift 2..62, multipliers 0, 1, 2^30, 2^31 - 1 and random ones, single and
double rounding, values at the extremes of the input type and at +-2^(S-1) (the spec's range
of apply_scale_32's value), zero points, saturation of the output, per channel and per
tensor, channel and element counts that are not multiples of 4 lanes.

Where the values are inside the spec's range, the expected output is the TOSA reference
model's (and the host's portable kernels must give it too); where they are not (the reference
model refuses them), it is the host's portable kernels': the variants must give what the
portable kernel gives for every input.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.cpu.graph_format import encode
from tests.cpu.cpu_helpers import (
    Graph,
    assert_bit_exact,
    build_tool,
    compare,
    run_cpu,
    write_check_cases,
)
from tests.runtime.runtime_helpers import build_dir, cmake_build, require, run

pytestmark = [pytest.mark.needs_tosa_ref, pytest.mark.needs_arm_gcc, pytest.mark.needs_qemu]

MULTIPLIERS = (2**31 - 1, 0, 1, 2**30, None)  # None: random per channel
LIMITS = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-2**31, 2**31 - 1)}


def edge_values(in_dtype: str, shifts: np.ndarray, izp: int, rows_random: int, seed: int,
                in_range: bool) -> np.ndarray:
    """Rows of values per column (shift S): the type's extremes, 0, +-1, and v = x - izp at
    +-2^(S-1) and one inside, then random rows; ``in_range`` clips every value to the spec's
    range of apply_scale_32, -2^(S-1) <= x - izp < 2^(S-1)."""
    lo, hi = LIMITS[in_dtype]
    half = np.left_shift(np.int64(1), shifts - 1)
    rows = [np.full(shifts.shape, v, np.int64) for v in (lo, hi, 0, 1, -1, izp, izp + 1)]
    rows += [izp + half - 1, izp - half, izp + half, izp - half - 1, izp + half // 2,
             izp - half // 2 - 1]
    rng = np.random.default_rng(seed)
    rows += [rng.integers(lo, hi + 1, size=shifts.shape) for _ in range(rows_random)]
    values = np.stack(rows)
    if in_range:
        values = np.clip(values, izp - half, izp + half - 1)
    return np.clip(values, lo, hi)


def rescale_graph(in_dtype: str, out_dtype: str, double_round: bool, izp: int, ozp: int,
                  shifts: tuple[int, int], in_range: bool, per_channel: bool = True,
                  rows_random: int = 12, seed: int = 0) -> Graph:
    """RESCALE of a (rows, channels) tensor. Per channel: every shift of ``shifts`` with each
    of MULTIPLIERS, plus one more channel (a partial vector of 4 lanes); per tensor: the shift
    ``shifts[0]`` and a random multiplier over an odd number of elements."""
    rng = np.random.default_rng(seed)
    if per_channel:
        span = np.arange(shifts[0], shifts[1] + 1)
        shift = np.concatenate([np.tile(span, len(MULTIPLIERS)), [shifts[1]]])
        multipliers = np.concatenate(
            [np.full(len(span), m) if m is not None else rng.integers(1, 2**31, size=len(span))
             for m in MULTIPLIERS] + [[2**31 - 1]])
        values = edge_values(in_dtype, shift, izp, rows_random, seed, in_range)
    else:
        shift = np.array([shifts[0]])
        multipliers = rng.integers(1, 2**31, size=1)
        values = edge_values(in_dtype, np.full(37, shift[0]), izp, 40, seed, in_range)
    g = Graph()
    x = g.input("x", values.astype(f"int{in_dtype[3:]}"), in_dtype)
    inputs = [x, g.const(multipliers, "int32"), g.const(shift, "int8"), g.zp(izp, in_dtype),
              g.zp(ozp, out_dtype)]
    y = g.op("RESCALE", inputs, values.shape, out_dtype, scale32=True,
             rounding_mode="DOUBLE_ROUND" if double_round else "SINGLE_ROUND",
             per_channel=per_channel, input_unsigned=False, output_unsigned=False)
    return g.output(y)


# name: (in type, out type, double rounding, input zp, output zp, shifts, in the spec's range
# (the reference model is the expected output), per channel[, random rows: 12]). The vector
# path takes shifts where value << ls fits for every value of the input type (int32: 32..,
# double 31..; int8 10.., double 9..; int16 16.., double 15..); the others check the MVE
# build's dispatch to the generic loop, over values outside the spec's range too.
CASES = {
    "i32_i8_single_vector": ("int32", "int8", False, 0, -7, (32, 62), True, True),
    "i32_i8_double_vector": ("int32", "int8", True, 0, 100, (31, 62), True, True),
    "i32_i8_single_all_shifts": ("int32", "int8", False, 0, -128, (2, 62), False, True),
    "i32_i8_double_all_shifts": ("int32", "int8", True, 0, 127, (2, 62), False, True),
    "i8_i32_single_vector": ("int8", "int32", False, -128, 0, (10, 62), True, True),
    "i8_i32_double_vector": ("int8", "int32", True, 11, 0, (9, 62), True, True),
    "i8_i32_single_all_shifts": ("int8", "int32", False, -128, 0, (2, 62), False, True),
    "i16_i32_single_vector": ("int16", "int32", False, 0, 0, (16, 62), True, True),
    "i16_i32_double_vector": ("int16", "int32", True, 0, 0, (15, 62), True, True),
    "i16_i32_double_all_shifts": ("int16", "int32", True, 0, 0, (2, 62), False, True),
    "i8_i32_tensor_shift11": ("int8", "int32", False, 5, 0, (11, 11), True, False),
    "i8_i32_tensor_shift9_double": ("int8", "int32", True, -3, 0, (9, 9), True, False),
    "i8_i32_tensor_shift2": ("int8", "int32", True, -3, 0, (2, 2), False, False),
    "i32_i8_tensor_shift40": ("int32", "int8", True, 0, -50, (40, 40), True, False),
    "i32_i8_tensor_shift32": ("int32", "int8", False, 0, 3, (32, 32), True, False),
    "i32_i8_tensor_shift20": ("int32", "int8", False, 0, 3, (20, 20), False, False),
    # NEON per channel: rows in blocks of 32 (83 rows), 5 groups of 4 channels and a tail.
    "i32_i8_double_83_rows": ("int32", "int8", True, 0, -5, (31, 34), True, True, 70),
}


@pytest.fixture(scope="module")
def cases(request, tmp_path_factory):
    """Per case: the CPU graph, its input and the expected output (reference model inside the
    spec's range, where the host's portable kernels must agree; else the portable kernels),
    as bytes, and the input array."""
    tool = build_tool(request)
    folder = tmp_path_factory.mktemp("rescale_mve")
    cases = {}
    for seed, (name, case) in enumerate(CASES.items()):
        *args, in_spec, per_channel = case[:8]
        graph = rescale_graph(*args, in_spec, per_channel, *case[8:], seed=seed)
        tosa = graph.write(folder / f"{name}.tosa")
        blob, info = encode(tosa)
        (value,) = graph.values.values()
        if in_spec:
            results = compare(tool, tosa, graph.values)
            assert_bit_exact(results)
            ((expected, _),) = results.values()
            expected = expected.astype(f"int{info.outputs[0].dtype[3:]}")
        else:
            (folder / name).mkdir()
            (folder / name / "model.tcg").write_bytes(blob)
            _, (expected,) = run_cpu(tool, folder / name / "model.tcg", [value], folder / name)
        cases[name] = (blob, value.tobytes(), expected.tobytes(), value)
    return cases


@pytest.fixture(scope="module")
def cases_c(cases, tmp_path_factory):
    return write_check_cases({name: case[:3] for name, case in cases.items()},
                             tmp_path_factory.mktemp("rescale_c") / "cases.c")


VARIANTS = {  # name: (cpu, isa, QEMU machine, board memory map, variant, an instruction of it)
    "m55_mve": ("cortex-m55", "mve", "mps3-an547", "mps3_an547", "mve", "vqdmulh.s32"),
    "m4_dsp": ("cortex-m4", "dsp", "mps2-an386", "mps2", "dsp", "qadd"),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_rescale_variant_is_bit_exact_over_edge_cases(variant, cases_c, request):
    cpu, isa, machine, board, name, instruction = VARIANTS[variant]
    build = cmake_build(build_dir(request, f"tosa-cpu-check-rescale-{variant}"),
                        "arm-none-eabi-gcc", "cortex_m", f"-DETHOSU_RT_CPU={cpu}",
                        f"-DETHOSU_RT_ISA={isa}", f"-DTOSA_CPU_CHECK_CASES_C={cases_c}",
                        f"-DTOSA_CPU_CHECK_BOARD={board}", targets=("tosa_cpu_check",))
    result = run([require("qemu-system-arm"), "-M", machine, "-nographic", "-monitor", "none",
                  "-semihosting-config", "enable=on,target=native", "-kernel",
                  build / "bin" / "tosa_cpu_check.elf"], timeout=300, check=False)
    console = result.stdout + result.stderr
    assert f"tosa_cpu_check: kernels {name}: {len(CASES)}/{len(CASES)} cases bit-exact" \
        in console, console
    # The variant's RESCALE is in the library that ran.
    code = run([require("arm-none-eabi-objdump"), "-d", build / "lib" / "libtosa_cpu.a"]).stdout
    assert instruction in code, f"no {instruction} in the {name} library"


@pytest.mark.needs_aarch64_gcc
def test_rescale_neon_is_bit_exact_under_qemu_aarch64(cases, request, tmp_path):
    """The NEON RESCALE (AArch64, tosa_cpu_run under qemu-aarch64) over the same cases."""
    build = cmake_build(build_dir(request, "tosa-cpu-aarch64"), "aarch64-linux-gnu-gcc",
                        "cortex_a", targets=("tosa_cpu_run",))
    qemu = require("qemu-aarch64")
    wrapper = tmp_path / "tosa_cpu_run"
    wrapper.write_text(f'#!/bin/sh\nexec {qemu} {build / "bin" / "tosa_cpu_run"} "$@"\n')
    wrapper.chmod(0o755)
    for name, (blob, _, expected, value) in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "model.tcg").write_bytes(blob)
        _, (ours,) = run_cpu(wrapper, folder / "model.tcg", [value], folder)
        assert ours.tobytes() == expected, name
    code = run([require("aarch64-linux-gnu-objdump"), "-d", build / "lib" / "libtosa_cpu.a"])
    assert "sqrdmulh" in code.stdout and "sqdmulh" in code.stdout  # the NEON RESCALE
