"""The runtime built with ``ETHOSU_RT_LINUX_DRIVER=ethosu-driver-stack`` against the TEST DOUBLE
of Arm's driver stack (``tests/runtime/cortex_a/fake_driver_stack``, laid out as a checkout;
no Ethos-U hardware here): the CMake path of a checkout, the runner's driver options and what it
prints, and the configure-time error without a checkout or a network.

The contract tests of the backend itself (``driver_stack_tests``) run in every Linux build: on
the host under ASan/UBSan (test_host_runtime.py) and under qemu-aarch64
(test_aarch64_runtime.py).
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.runtime.runtime_helpers import (
    REPO,
    SEPARATE_IO_WORDS,
    build_dir,
    cmake_build,
    configure_argv,
    cop2,
    make_artifact,
    require,
    run,
)

pytestmark = pytest.mark.needs_cmake

FAKE_STACK = REPO / "tests" / "runtime" / "cortex_a" / "fake_driver_stack"


@pytest.fixture(scope="module")
def stack_build(request):
    return cmake_build(build_dir(request, "host-driver-stack"), "host", "host",
                       "-DETHOSU_RT_LINUX_DRIVER=ethosu-driver-stack",
                       f"-DETHOSU_RT_DRIVER_STACK_DIR={FAKE_STACK}")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("driver-stack-model")
    return make_artifact(folder, shape=(1, 4, 4, 8), regions=(3, 4), scratch=0,
                         cmd=cop2(SEPARATE_IO_WORDS))


def _runner(build, *args, env=None):
    return subprocess.run([build / "bin" / "ethosu_runner", *map(str, args)], check=False,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def test_the_checkout_adds_the_driver_stack_library(stack_build):
    listed = (stack_build / "ethosu_rt_outputs.txt").read_text().split()
    names = sorted(p.rsplit("/", 1)[-1] for p in listed)
    assert names == ["ethosu_runner", "libethosu_rt_common.a", "libethosu_rt_cortex_a.a",
                     "libethosu_rt_driver_stack.a"]


def test_runner_prints_npu_cycles_and_pmu_events_fake_driver_stack(stack_build, model, tmp_path):
    """The runner over the test double: /dev/ethosu0 by default, the cycle counter always on,
    the events of --pmu-events listed; the fake NPU copies region 3 to region 4."""
    x = bytes(range(128))
    (tmp_path / "x.bin").write_bytes(x)
    result = _runner(stack_build, "--model", model, "--input", tmp_path / "x.bin",
                     "--output", tmp_path / "out", "--num-executions", "2",
                     "--pmu-events", "0x22,48", env={"FAKE_ETHOSU_CYCLES": "4321"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"inference 1: \d+\.\d{3} ms, 4321 NPU cycles", lines[0])
    assert lines[1:3] == ["  pmu event 34: 0", "  pmu event 48: 0"]
    assert re.fullmatch(r"inference 2: \d+\.\d{3} ms, 4321 NPU cycles", lines[3])
    assert (tmp_path / "out-0.bin").read_bytes() == x


@pytest.mark.parametrize("env, args, message", [
    ({}, ("--device", "/dev/ethosu5"),
     (r"npu_driver_stack\.cc:\d+: /dev/ethosu5: EthosU::Device \(open of the NPU device node\) "
     r"must be done without an exception; got 'Failed to open device /dev/ethosu5: No such file "
     r"or directory'")),
    ({"FAKE_ETHOSU_TIMEOUT": "1"}, ("--timeout-ms", "250"),
     (r"npu_driver_stack\.cc:\d+: /dev/ethosu0: inference must be done within the timeout; got "
     r"still running after 250 ms")),
    ({"FAKE_ETHOSU_STATUS": "3"}, (),
     (r"npu_driver_stack\.cc:\d+: /dev/ethosu0: inference status must be OK; got REJECTED "
     r"\(the kernel refused the inference\)")),
    ({}, ("--pmu-events", "1,2,3,4,5,6,7,8,9"),
     r"--pmu-events must list at most 8 events; got 9"),
    ({}, ("--pmu-events", "0x22,cycles"),
     r"--pmu-events must be a comma-separated list of PMU event numbers; got '0x22,cycles'"),
    ({}, ("--driver", "accel", "--pmu-events", "1"),
     r"--pmu-events must be used with --driver ethosu-driver-stack; got --driver accel"),
    ({}, ("--driver", "npu"), r"--driver must be accel or ethosu-driver-stack; got 'npu'"),
])
def test_runner_failures_are_one_line_fake_driver_stack(stack_build, model, env, args, message):
    result = _runner(stack_build, "--model", model, *args, env=env)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert re.fullmatch(f"ethosu_runner: error: {message}", lines[0]), lines[0]


def test_runner_still_drives_the_drm_accel_driver(stack_build, model, tmp_path):
    result = _runner(stack_build, "--model", model, "--driver", "accel",
                     "--device", tmp_path / "accel9")
    assert result.returncode == 1
    assert re.search(r"npu_drm\.cc:\d+: .*/accel9: open\(\) of the NPU device node must be 0",
                     result.stderr), result.stderr


def test_configure_without_checkout_or_network_is_one_error_naming_both_ways(tmp_path):
    require("cmake")
    result = run(configure_argv(tmp_path / "b", "host", "host",
                                "-DETHOSU_RT_LINUX_DRIVER=ethosu-driver-stack",
                                f"-DETHOSU_RT_DRIVER_STACK_URL={tmp_path / 'unreachable.git'}"),
                 check=False)
    assert result.returncode != 0
    text = " ".join(result.stderr.split())
    assert ("ETHOSU_RT_LINUX_DRIVER=ethosu-driver-stack needs Arm's Ethos-U Linux driver stack: "
            "configure with -DETHOSU_RT_DRIVER_STACK_DIR=<checkout of ethos-u-linux-driver-stack> "
            "(targets.yaml: npu.driver_stack), or let CMake fetch tag 26.05 from "
            f"{tmp_path / 'unreachable.git'}. No checkout was given and the fetch failed "
            "(exit status 128: ") in text, text
    assert text.count("CMake Error") == 1


@pytest.mark.parametrize("options, message", [
    (("-DETHOSU_RT_LINUX_DRIVER=ethosu-driver-stack", "-DETHOSU_RT_DRIVER_STACK_DIR=/"),
     ("ETHOSU_RT_DRIVER_STACK_DIR must be a checkout of ethos-u-linux-driver-stack; got '/', "
     "where driver_library/include/ethosu.hpp, driver_library/src/ethosu.cpp, "
     "kernel/include/uapi/ethosu.h is missing")),
    (("-DETHOSU_RT_LINUX_DRIVER=drm",),
     "ETHOSU_RT_LINUX_DRIVER must be accel or ethosu-driver-stack; got 'drm'"),
])
def test_configure_rejects_a_wrong_driver_or_checkout(tmp_path, options, message):
    require("cmake")
    result = run(configure_argv(tmp_path, "host", "host", *options), check=False)
    assert result.returncode != 0
    assert message in " ".join(result.stderr.split()), result.stderr
