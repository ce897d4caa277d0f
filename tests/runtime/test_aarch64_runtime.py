"""The Linux runtime cross-built for AArch64, statically linked, run under qemu-aarch64:
with Debian's aarch64-linux-gnu-g++ (glibc) and with zig's clang (musl, libc++)."""

from __future__ import annotations

import subprocess

import pytest

from tests.runtime.runtime_helpers import (build_dir, cmake_build, ctest, make_artifact, require,
                                            run, zig_env)

pytestmark = pytest.mark.needs_qemu

BUILDS = {
    "gnu": pytest.param(("aarch64-linux-gnu-gcc", None), marks=pytest.mark.needs_aarch64_gcc,
                        id="gnu"),
    "zig": pytest.param(("aarch64-linux-musl-zig", "zig"), marks=pytest.mark.needs_zig, id="zig"),
}


@pytest.fixture(scope="module", params=BUILDS.values())
def aarch64_build(request):
    toolchain, kind = request.param
    env = zig_env() if kind == "zig" else None
    if kind != "zig":
        require("aarch64-linux-gnu-g++")
    build = cmake_build(build_dir(request, toolchain), toolchain, "cortex_a",
                        "-DETHOSU_RT_CPU=cortex-a55", "-DETHOSU_RT_BUILD_TESTS=ON", env=env)
    return build


def test_unit_tests_pass_under_qemu_aarch64(aarch64_build):
    out = ctest(aarch64_build)
    for name in ("common_tests", "cortex_m_tests", "cortex_a_tests", "driver_stack_tests"):
        assert name in out


def test_runner_is_a_static_aarch64_executable(aarch64_build):
    info = run([require("file"), aarch64_build / "bin" / "ethosu_runner"]).stdout
    assert "ARM aarch64" in info and "statically linked" in info


def test_runner_reports_a_missing_device_in_one_line(aarch64_build, tmp_path):
    model = make_artifact(tmp_path)
    result = subprocess.run([require("qemu-aarch64"), aarch64_build / "bin" / "ethosu_runner",
                             "--model", model, "--device", "/dev/accel/accel9"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert "/dev/accel/accel9: open() of the NPU device node must be 0; got -2 (" in result.stderr
