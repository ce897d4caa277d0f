"""The kernels' instruction-set variants on their own instruction set, under QEMU: MVE on the
Cortex-M55 (mps3-an547), DSP on the Cortex-M4 (mps2-an386), the portable C++ on the M55
without MVE/DSP, NEON on AArch64 (qemu-aarch64) - each running graphs of the operators the
variants speed up (CONV2D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D, MATMUL, AVG_POOL2D,
MAX_POOL2D, int32 ADD/SUB; channel counts that are and are not multiples of the vector
width; zero points),
bit-exact with the TOSA reference model, which the portable kernels match on the host
(test_kernels.py)."""

from __future__ import annotations

import re

import pytest

from pipeline.cpu.graph_format import encode
from pipeline.verify.reference_model import run_reference_model
from tests.cpu import test_kernels as k
from tests.cpu.cpu_helpers import assert_bit_exact, compare, write_check_cases
from tests.runtime.runtime_helpers import build_dir, cmake_build, require, run

pytestmark = [pytest.mark.needs_tosa_ref, pytest.mark.needs_arm_gcc, pytest.mark.needs_qemu]

CASES = {
    "conv2d_int8_ic3": lambda: k.conv2d(izp=-7, wzp=3),
    "conv2d_int8_ic37_stride2": lambda: k.conv2d(shape=(1, 9, 9, 37), oc=5, stride=(2, 2),
                                                izp=11),
    "conv2d_int8_ic64_1x1": lambda: k.conv2d(shape=(1, 6, 6, 64), oc=8, k=(1, 1),
                                            pad=(0, 0, 0, 0), izp=-128),
    "conv2d_int16_ic24": lambda: k.conv2d("int16", shape=(1, 7, 7, 24), oc=4),
    "depthwise_int8_c19": lambda: k.depthwise(shape=(1, 9, 9, 19), m=1, izp=5, wzp=-1),
    "depthwise_int8_c32_stride2": lambda: k.depthwise(shape=(1, 10, 10, 32), m=1,
                                                      stride=(2, 2), pad=(1, 0, 1, 0)),
    "depthwise_int8_m2": lambda: k.depthwise(m=2, izp=-3),
    # MVE: 8-channel groups stored interleaved (vst2), a per-tensor bias.
    "depthwise_int8_c24_bias_one": lambda: k.depthwise(shape=(1, 6, 6, 24), m=1, izp=-128,
                                                       wzp=2, bias_one=True),
    # MVE CONV2D: 4 output channels per pass plus a tail, both zero points, a per-tensor
    # bias; more output channels than the folded-bias buffer holds (the generic MVE path).
    "conv2d_int8_oc13_zps": lambda: k.conv2d(shape=(1, 7, 7, 20), oc=13, izp=-128, wzp=-5,
                                             bias_one=True),
    "conv2d_int8_oc260_1x1": lambda: k.conv2d(shape=(1, 3, 3, 24), oc=260, k=(1, 1),
                                              pad=(0, 0, 0, 0), izp=9, wzp=1),
    "transpose_conv_int8_ic21": lambda: k.transpose_conv(shape=(1, 4, 4, 21), izp=7),
    "matmul_int8_c40": lambda: matmul_const_b(c=40),
    "matmul_int8_c300": lambda: matmul_const_b(c=300, azp=5, bzp=0),
    "conv_then_rescale": k.two_ops,
    # MVE AVG_POOL2D: 4 channels per vector, padding (fewer taps at the borders), zero points,
    # a global pool of many taps.
    "avg_pool_int8_pad_zp": lambda: k.pool("AVG_POOL2D", shape=(1, 9, 9, 7), k=(2, 3),
                                           stride=(1, 2), pad=(0, 1, 1, 1), izp=-9, ozp=4),
    "avg_pool_int8_global": lambda: k.pool("AVG_POOL2D", shape=(1, 25, 5, 64), k=(25, 5),
                                           stride=(1, 1), pad=(0, 0, 0, 0), izp=-128, ozp=-128),
    # NEON: 8 channels per step plus a scalar tail (depthwise, AVG_POOL2D), 16 (MAX_POOL2D);
    # extreme zero points, dilation, a 1x1 average (its rescale's left shift), saturation.
    "depthwise_int8_c13_dil2_zps": lambda: k.depthwise(shape=(1, 9, 9, 13), m=1, dil=(2, 2),
                                                       pad=(2, 2, 2, 2), izp=-128, wzp=127),
    "avg_pool_int8_c21_pad_zp": lambda: k.pool("AVG_POOL2D", shape=(1, 9, 9, 21), izp=127,
                                               ozp=-128),
    "avg_pool_int8_1x1_c8": lambda: k.pool("AVG_POOL2D", shape=(1, 4, 4, 8), k=(1, 1),
                                           stride=(1, 1), pad=(0, 0, 0, 0), izp=-128, ozp=127),
    # DSP AVG_POOL2D: halfword sums up to 256 taps (16 x 16), more (20 x 15) fall back.
    "avg_pool_int8_256_taps": lambda: k.pool("AVG_POOL2D", shape=(1, 16, 16, 9), k=(16, 16),
                                             stride=(1, 1), pad=(0, 0, 0, 0), izp=-128, ozp=3),
    "avg_pool_int8_300_taps": lambda: k.pool("AVG_POOL2D", shape=(1, 20, 15, 6), k=(20, 15),
                                             stride=(1, 1), pad=(0, 0, 0, 0), izp=7),
    "max_pool_int8_c37_pad": lambda: k.pool("MAX_POOL2D", shape=(1, 9, 9, 37)),
    "max_pool_int8_c16_global": lambda: k.pool("MAX_POOL2D", shape=(1, 6, 5, 16), k=(6, 5),
                                               stride=(1, 1), pad=(0, 0, 0, 0)),
    "add_int32_const": lambda: binary_const_b("ADD"),  # MVE: 4 lanes and a partial vector
    "sub_int32_const": lambda: binary_const_b("SUB"),
}
VARIANTS = {  # name: (cpu, isa, QEMU machine, board memory map, expected variant)
    "m55_mve": ("cortex-m55", "mve", "mps3-an547", "mps3_an547", "mve"),
    "m55_portable": ("cortex-m55", "scalar", "mps3-an547", "mps3_an547", "portable"),
    "m4_dsp": ("cortex-m4", "dsp", "mps2-an386", "mps2", "dsp"),
}


def matmul_const_b(n=2, h=7, c=40, w=9, azp=-3, bzp=11, seed=0):
    """MATMUL with a constant B (a single graph input for the firmware)."""
    g = k.Graph()
    a = g.input("a", k.random((n, h, c), "int8", seed), "int8")
    b = g.const(k.random((n, c, w), "int8", seed + 1), "int8")
    return g.output(g.op("MATMUL", [a, b, g.zp(azp, "int8"), g.zp(bzp, "int8")], (n, h, w),
                         "int32"))


def binary_const_b(op, shape=(3, 5, 7), seed=0):
    """Same-shape int32 ADD/SUB with a constant second operand."""
    g = k.Graph()
    a = g.input("a", k.random(shape, "int32", seed, -(1 << 20), 1 << 20), "int32")
    b = g.const(k.random(shape, "int32", seed + 1, -(1 << 20), 1 << 20), "int32")
    return g.output(g.op(op, [a, b], shape, "int32"))


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """Per case: the TOSA graph, its CPU graph, input values and the reference output."""
    folder = tmp_path_factory.mktemp("isa")
    out = {}
    for name, build in CASES.items():
        graph = build()
        tosa = graph.write(folder / f"{name}.tosa")
        blob, info = encode(tosa)
        assert len(info.inputs) == 1 and len(info.outputs) >= 1
        values = graph.values
        reference = run_reference_model(tosa, values, [t.name for t in info.outputs])
        out[name] = (tosa, blob, values, reference[info.outputs[0].name])
    return out


@pytest.fixture(scope="module")
def cases_c(graphs, tmp_path_factory):
    cases = {name: (blob, next(iter(values.values())).tobytes(), expected.tobytes())
             for name, (_, blob, values, expected) in graphs.items()}
    return write_check_cases(cases, tmp_path_factory.mktemp("isa_c") / "cases.c")


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_variant_is_bit_exact_on_its_instruction_set(variant, cases_c, request):
    cpu, isa, machine, board, expected = VARIANTS[variant]
    build = cmake_build(build_dir(request, f"tosa-cpu-check-{variant}"), "arm-none-eabi-gcc",
                        "cortex_m", f"-DETHOSU_RT_CPU={cpu}", f"-DETHOSU_RT_ISA={isa}",
                        f"-DTOSA_CPU_CHECK_CASES_C={cases_c}",
                        f"-DTOSA_CPU_CHECK_BOARD={board}", targets=("tosa_cpu_check",))
    result = run([require("qemu-system-arm"), "-M", machine, "-nographic", "-monitor", "none",
                  "-semihosting-config", "enable=on,target=native", "-kernel",
                  build / "bin" / "tosa_cpu_check.elf"], timeout=300, check=False)
    console = result.stdout + result.stderr  # semihosting's console is QEMU's stderr
    assert f"tosa_cpu_check: kernels {expected}: {len(CASES)}/{len(CASES)} cases bit-exact" \
        in console, console
    assert result.returncode == 0


@pytest.mark.needs_aarch64_gcc
def test_neon_variant_is_bit_exact_under_qemu_aarch64(graphs, request, tmp_path):
    build = cmake_build(build_dir(request, "tosa-cpu-aarch64"), "aarch64-linux-gnu-gcc",
                        "cortex_a", targets=("tosa_cpu_run",))
    qemu = require("qemu-aarch64")
    wrapper = tmp_path / "tosa_cpu_run"
    wrapper.write_text(f'#!/bin/sh\nexec {qemu} {build / "bin" / "tosa_cpu_run"} "$@"\n')
    wrapper.chmod(0o755)
    for name, (tosa, _, values, _) in graphs.items():
        results = compare(wrapper, tosa, values)
        assert_bit_exact(results)
    code = run([require("aarch64-linux-gnu-objdump"), "-d", build / "lib" / "libtosa_cpu.a"])
    # The NEON dot product, depthwise, AVG_POOL2D and MAX_POOL2D are in the library.
    for instruction in ("smull", "smlal2", "saddw2", "smax"):
        assert instruction in code.stdout, f"no {instruction} in the NEON library"


def test_library_uses_no_heap_exceptions_or_rtti_and_fits_32_kib(request):
    build = cmake_build(build_dir(request, "tosa-cpu-m55-lib"), "arm-none-eabi-gcc", "cortex_m",
                        "-DETHOSU_RT_CPU=cortex-m55", targets=("tosa_cpu",))
    undefined = run([require("arm-none-eabi-nm"), "-u", "-C",
                     build / "lib" / "libtosa_cpu.a"]).stdout
    forbidden = re.compile(r"\b(malloc|calloc|realloc|free|operator new|operator delete|"
                           r"__cxa_\w+|typeinfo|printf|puts)\b")
    assert not forbidden.findall(undefined), undefined
    size = run([require("arm-none-eabi-size"), "-t", build / "lib" / "libtosa_cpu.a",
                build / "lib" / "libethosu_rt_common.a"]).stdout
    text = int(size.strip().splitlines()[-1].split()[0])
    # Every kernel (CONV2D's file at -O2 but for its rarely used operators and the loops the
    # MVE kernels replace, the rest -Os) plus all of common/, Cortex-M55 MVE, Release, check
    # texts off: measured 24,888 + 6,934 B.
    # The goal: kernels + runtime under 32 KiB of code.
    assert text < 32 * 1024, size
