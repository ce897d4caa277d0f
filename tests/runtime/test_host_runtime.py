"""The runtime built for the build machine: unit tests under ASan/UBSan, the Linux runner's
command line, and the configure-time rules (one platform, toolchain files)."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.runtime.runtime_helpers import (REPO, TOOLCHAINS, build_dir, cmake_build,
                                            configure_argv, ctest, make_artifact, require, run)


pytestmark = pytest.mark.needs_cmake


@pytest.fixture(scope="module")
def host_build(request):
    return cmake_build(build_dir(request, "host"), "host", "host", "-DETHOSU_RT_BUILD_TESTS=ON",
                       "-DETHOSU_RT_SANITIZE=ON", build_type="Debug")


def test_unit_tests_pass_under_asan_and_ubsan(host_build):
    out = ctest(host_build)
    for name in ("common_tests", "cortex_m_tests", "cortex_a_tests", "driver_stack_tests"):
        assert name in out


def test_outputs_file_lists_libraries_and_runner(host_build):
    listed = (host_build / "ethosu_rt_outputs.txt").read_text().split()
    names = sorted(p.rsplit("/", 1)[-1] for p in listed)
    assert names == ["ethosu_runner", "libethosu_rt_common.a", "libethosu_rt_cortex_a.a"]


def _runner(host_build, *args, tmp_path=None):
    return subprocess.run([host_build / "bin" / "ethosu_runner", *map(str, args)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)


def test_runner_reports_a_missing_device_in_one_line(host_build, tmp_path):
    model = make_artifact(tmp_path)
    result = _runner(host_build, "--model", model, "--device", tmp_path / "accel9")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert re.fullmatch(r"ethosu_runner: error: npu_drm\.cc:\d+: .*/accel9: open\(\) of the NPU "
                        r"device node must be 0; got -2 \(No such file or directory\)", lines[0])


def test_runner_reports_a_wrong_artifact_in_one_line(host_build, tmp_path):
    model = make_artifact(tmp_path)
    data = bytearray(model.read_bytes())
    data[32:40] = b"weights\0"  # the cmd_data block renamed
    model.write_bytes(bytes(data))
    result = _runner(host_build, "--model", model)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "block 2 'cmd_data' at offset 32: block name" in result.stderr
    assert "must be 'cmd_data'; got 'weights'" in result.stderr


def test_runner_checks_inputs_against_the_artifact(host_build, tmp_path):
    model = make_artifact(tmp_path)
    (tmp_path / "short.bin").write_bytes(bytes(100))
    result = _runner(host_build, "--model", model, "--input", tmp_path / "short.bin")
    assert result.returncode == 1
    assert result.stderr == (f"ethosu_runner: error: input 0 '{tmp_path / 'short.bin'}' must hold "
                             "1024 bytes (int8 tensor 'x'); got 100\n")
    result = _runner(host_build, "--model", model, "--input", "a.bin,b.bin")
    assert "--input must list 1 file(s); got 2" in result.stderr


def test_runner_command_line(host_build, tmp_path):
    assert _runner(host_build, "--help").returncode == 0
    result = _runner(host_build)
    assert (result.returncode, result.stderr) == (1, "ethosu_runner: error: --model must be "
                                                     "given; see --help\n")
    result = _runner(host_build, "--model", "m.bin", "--num-executions", "0")
    assert "--num-executions must be a positive integer; got '0'" in result.stderr
    result = _runner(host_build, "--model", tmp_path / "none.bin")
    assert result.returncode == 1 and "model" in result.stderr and "none.bin" in result.stderr


def test_the_packager_output_parses(host_build, tmp_path):
    # The real packager's artifact passes the C++ parser: the run gets as far as the device.
    for dtype, shape in (("int8", (1, 8, 8, 16)), ("int16", (2, 5)), ("int32", (7,))):
        model = make_artifact(tmp_path, dtype=dtype, shape=shape, scratch=4096, name=dtype)
        result = _runner(host_build, "--model", model, "--device", tmp_path / "none")
        assert "open() of the NPU device node" in result.stderr, result.stderr


@pytest.mark.parametrize("platform, message", [
    ("cortex_a;host", "ETHOSU_RT_PLATFORM must name exactly one platform (cortex_m, cortex_a or "
                      "host); got 2: 'cortex_a;host'"),
    ("cortex_m,host", "must name exactly one platform"),
    ("risc_v", "ETHOSU_RT_PLATFORM must be one of cortex_m, cortex_a, host; got 'risc_v'"),
    ("", "ETHOSU_RT_PLATFORM must be one of cortex_m, cortex_a, host; got nothing"),
    ("cortex_m", "ETHOSU_RT_PLATFORM=cortex_m must be built with a bare-metal toolchain"),
])
def test_configure_refuses_anything_but_one_platform(tmp_path, platform, message):
    require("cmake")
    result = run(configure_argv(tmp_path, "host", platform), check=False)
    assert result.returncode != 0
    assert message in " ".join(result.stderr.split()), result.stderr


def test_toolchain_files_only_set_compilers_flags_and_find_modes():
    for path in TOOLCHAINS.glob("*.cmake"):
        text = path.read_text()
        assert "cmake_minimum_required" not in text, path
        assert not re.search(r"cmake_policy\s*\(.*OLD", text), path
        assert "add_compile_options" not in text and "add_definitions" not in text, path
    # Warnings are set per target (ethosu_rt_warnings), never directory-wide.
    for path in [*REPO.joinpath("runtime").rglob("CMakeLists.txt"),
                 *REPO.joinpath("tests", "runtime").rglob("CMakeLists.txt")]:
        assert not re.search(r"add_compile_options\([^)]*-W", path.read_text()), path
