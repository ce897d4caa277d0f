"""End to end: `doit build` of CPU-only targets (npu: null) with the real torch, tosa-tools,
cross compilers, kernel library and QEMU: Cortex-M55 (MVE, mps3-an547), Cortex-M4 (DSP,
mps2-an386), Cortex-A53 Linux (qemu-aarch64) with both example models; the add model on the
Cortex-M7 (mps2-an500) and M33 (mps2-an505) boards, and on the Cortex-M0+, M23, M52 and M85
that QEMU lacks (run on the mps2-an385's Cortex-M3, the mps2-an505's M33 and the mps3-an547's
M55); then every other example
model (the MLPerf Tiny networks, MobileNetV2, a transformer block) on the M55, M4 and A53.
Module-scoped builds sharing one store.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.runner import ADD_AND_CNN, ROOT
from tests.e2e.runner import doit as run_doit

pytestmark = [pytest.mark.slow, pytest.mark.needs_torch, pytest.mark.needs_tosa_ref,
              pytest.mark.needs_arm_gcc, pytest.mark.needs_aarch64_gcc, pytest.mark.needs_qemu]

TARGETS = ADD_AND_CNN + """\
defaults:
  models: [add, cnn]
  npu: null
targets:
  m55-cpu: {cpu: cortex-m55}
  m4-cpu: {cpu: cortex-m4}
  a53-cpu: {cpu: cortex-a53}
  m0-cpu: {cpu: cortex-m0plus, models: [add]}
  m7-cpu: {cpu: cortex-m7, models: [add]}
  m33-cpu: {cpu: cortex-m33, models: [add]}
  m85-cpu: {cpu: cortex-m85, models: [add]}
  m23-cpu: {cpu: cortex-m23, models: [add]}
  m52-cpu: {cpu: cortex-m52, models: [add]}
"""
MACHINES = {"m55-cpu": ("mps3-an547", "cortex-m55"), "m4-cpu": ("mps2-an386", "cortex-m4"),
            "a53-cpu": ("qemu-aarch64", "cortex-a53"), "m0-cpu": ("mps2-an385", "cortex-m3"),
            "m7-cpu": ("mps2-an500", "cortex-m7"), "m33-cpu": ("mps2-an505", "cortex-m33"),
            "m85-cpu": ("mps3-an547", "cortex-m55"), "m23-cpu": ("mps2-an505", "cortex-m33"),
            "m52-cpu": ("mps3-an547", "cortex-m55")}


MLPERF = ["ds_cnn", "resnet8", "mobilenet_v1", "autoencoder", "mobilenet_v2", "transformer"]


def doit(project: Path, *args: str) -> subprocess.CompletedProcess:
    return run_doit(project, *args, store=project.store)


class Project(type(Path())):
    store: Path


@pytest.fixture(scope="module")
def project(new_project) -> Project:
    root = Project(new_project("cpu-project", TARGETS))
    root.store = root / "store"
    proc = doit(root, "build")
    (root / "cold.log").write_text(proc.stdout)
    return root


@pytest.fixture(scope="module")
def mlperf(project) -> Project:
    """The example models of targets.yaml but add/cnn, on the M55, M4 and A53 (same store)."""
    root = Project(project / "mlperf")
    root.store = project.store
    root.mkdir()
    text = (ROOT / "targets.yaml").read_text()
    models = text[text.index("\nmodels:") + 1:text.index("\ndefaults:") + 1]
    (root / "targets.yaml").write_text(
        models.replace("source: models/", f"source: {ROOT}/models/")
        + f"defaults: {{models: [{', '.join(MLPERF)}], npu: null}}\n"
        + "targets: {m55-cpu: {cpu: cortex-m55}, m4-cpu: {cpu: cortex-m4}, "
          "a53-cpu: {cpu: cortex-a53}}\n")
    doit(root, "build")
    return root


@pytest.mark.parametrize("target", ["m55-cpu", "m4-cpu", "a53-cpu"])
def test_every_example_model_runs_bit_exact_on_the_cpu(mlperf, target):
    report = _report(mlperf, target)
    assert sorted(report["models"]) == sorted(MLPERF)
    for model, entry in report["models"].items():
        check = entry["cpu"]["verify"]
        assert check["passed"] and check["qemu"] == MACHINES[target][0], model
        assert all(o["values_differing"] == 0 for o in check["outputs"]), model
        assert entry["cpu"]["arena_bytes"] < entry["cpu"]["tensor_bytes"], model


def _report(project: Path, target: str) -> dict:
    return json.loads((project / "build" / target / "report.json").read_text())


def test_every_model_runs_bit_exact_under_qemu_on_each_cpu(project):
    for target, (machine, qemu_cpu) in MACHINES.items():
        report = _report(project, target)
        for model, entry in report["models"].items():
            cpu = entry["cpu"]
            check = cpu["verify"]
            assert check["passed"] and (check["qemu"], check["qemu_cpu"]) == (machine, qemu_cpu)
            assert check["samples"] == 4
            assert all(o["values"] > 0 and o["values_differing"] == 0 for o in check["outputs"])
            assert 0 < cpu["arena_bytes"] <= cpu["tensor_bytes"] + 16 * len(cpu["operators"])
            assert {op["runs_on"] for op in cpu["operators"]} == {"cpu"}
            costs = [op["instructions"] for op in cpu["operators"]]
            if target == "a53-cpu":  # user-mode QEMU has no instruction clock
                assert cpu["instructions"] is None and set(costs) == {None}
            else:
                assert all(n > 0 for n in costs) and cpu["instructions"] == sum(costs)
            folder = project / "build" / target / model
            assert (folder / "model.cpu.bin").stat().st_size == cpu["artifact_bytes"]
            if target != "a53-cpu":
                assert (folder / "tosa_cpu_runner.elf").is_file()


def test_the_firmware_arena_is_the_memory_plan(project):
    """The firmware's static arena is exactly what the plan asks for (the runner checks it
    and prints both)."""
    folder = project / "build" / "m4-cpu" / "cnn"
    arena = _report(project, "m4-cpu")["models"]["cnn"]["cpu"]["arena_bytes"]
    proc = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor",
                           "none", "-semihosting-config", "enable=on,target=native,arg=r",
                           "-kernel", str(folder / "tosa_cpu_runner.elf")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    assert f"arena {arena} of {arena} bytes" in proc.stdout


def test_the_summary_line_says_where_operators_run_and_the_arena(project):
    log = (project / "cold.log").read_text()
    line = next(ln for ln in log.splitlines() if "m4-cpu/cnn: verified" in ln)
    assert re.search(r"CPU: \d+ ops \(.*CONV2D.*\), arena \d+ B, [\d,]+ instructions; QEMU "
                     r"mps2-an386 \(cortex-m4\): bit-exact", line), line


def test_a_cpu_qemu_lacks_is_reported_as_run_on_another(project):
    check = _report(project, "m0-cpu")["models"]["add"]["cpu"]["verify"]
    assert check["cpu"] == "cortex-m0plus" and check["qemu_cpu"] == "cortex-m3"
    assert "QEMU emulates no Cortex-M0/M0+" in check["substitute"]
    for target, cpu in (("m85-cpu", "Cortex-M85"), ("m52-cpu", "Cortex-M52"),
                        ("m23-cpu", "Cortex-M23")):
        check = _report(project, target)["models"]["add"]["cpu"]["verify"]
        assert f"QEMU emulates no {cpu}" in check["substitute"]
    assert "QEMU mps2-an385 (cortex-m3 for cortex-m0plus): bit-exact" in (
        project / "cold.log").read_text()
    assert _report(project, "m55-cpu")["models"]["add"]["cpu"]["verify"]["substitute"] is None


def test_the_cpu_graph_is_built_once_for_all_targets(project):
    log = (project / "cold.log").read_text()
    ran = re.findall(r"^\.  (cpu_graph:\S+)", log, re.MULTILINE)
    assert sorted(ran) == ["cpu_graph:add/int8/TOSA-1.0+INT+int16",
                           "cpu_graph:cnn/int8/TOSA-1.0+INT+int16"]


def test_a_second_build_runs_nothing(project):
    proc = doit(project, "build")
    assert not re.findall(r"^\.  (\S+)", proc.stdout, re.MULTILINE), proc.stdout


def _aarch64(project: Path, *args: str, cwd: Path) -> str:
    folder = project / "build" / "a53-cpu"
    proc = subprocess.run(["qemu-aarch64", "-cpu", "cortex-a53", str(folder / "tosa_cpu_runner"),
                           "--model", str(folder / "cnn" / "model.cpu.bin"), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_linux_runner_quantizes_and_dequantizes_float_io(project, tmp_path):
    io = json.loads((project / "build" / "a53-cpu" / "cnn" / "io.json").read_text())
    image, out = io["inputs"][0], io["outputs"][0]
    values = np.random.default_rng(0).uniform(-1, 1, image["torch_shape"]).astype(np.float32)
    (tmp_path / "image.f32").write_bytes(values.tobytes())
    q = np.clip(np.round(values / image["scale"]) + image["zero_point"], -128, 127)
    (tmp_path / "image.bin").write_bytes(q.astype(np.int8).tobytes())
    _aarch64(project, "--input", "image.f32", "--float-io", "--output", "f", cwd=tmp_path)
    _aarch64(project, "--input", "image.bin", "--output", "q", cwd=tmp_path)
    ints = np.frombuffer((tmp_path / "q-0.bin").read_bytes(), np.int8).astype(np.float32)
    floats = np.frombuffer((tmp_path / "f-0.bin").read_bytes(), np.float32)
    np.testing.assert_array_equal(floats, (ints - out["zero_point"]) * np.float32(out["scale"]))


def test_a_wrong_kernel_result_fails_naming_the_first_differing_operator(project, tmp_path):
    """A CPU artifact whose first weight byte was flipped stands for a wrong kernel: the
    check must fail and name operator #0 (CONV2D), where the values first part."""
    from pipeline.cpu.verify import CpuMismatch, cpu_verify
    from pipeline.artifact import HEADER

    folder = project / "build" / "a53-cpu"
    data = bytearray((folder / "cnn" / "model.cpu.bin").read_bytes())
    graph = HEADER.size  # the cpu_graph block's payload starts after its header
    constants = struct.unpack_from("<I", data, graph + 4 * 13)[0]
    data[graph + constants + 5] ^= 0x40
    (tmp_path / "bad.cpu.bin").write_bytes(data)
    lower = next((project / "build" / ".stages" / "lower" / "cnn").rglob("model.tosa")).parent
    inputs = {"runner": folder / "tosa_cpu_runner", "artifact": tmp_path / "bad.cpu.bin",
              "tosa": lower / "model.tosa", "io": lower / "io.json",
              "plan": folder / "cnn" / "cpu_plan.json",
              "test_inputs": project / "build" / ".stages" / "export" / "cnn" / "test_inputs.pt"}
    with pytest.raises(CpuMismatch, match=r"^a53-cpu/cpu_verify: every output of the CPU "
                       r"artifact must equal the TOSA reference model's bit for bit; output "
                       r"'linear' differs .* the first operator that differs is #0 CONV2D"):
        cpu_verify(inputs, tmp_path / "report.json", qemu="qemu-aarch64", qemu_cpu="cortex-a53",
                   cpu="cortex-a53", substitute=None, where="a53-cpu/cpu_verify")
    assert not (tmp_path / "report.json").exists()


def _damaged(data: bytes, case: str) -> bytes:
    graph_bytes = struct.unpack_from("<I", data, 16)[0]
    io_meta = 32 + ((graph_bytes + 15) & ~15)  # the io_meta block's header
    out = bytearray(data)
    if case == "truncated":
        return data[:-16]
    if case == "renamed":
        out[8] = ord("X")  # "cpu_grapX"
    elif case == "io_count":
        count = struct.unpack_from("<I", out, io_meta + 32 + 8)[0]
        struct.pack_into("<I", out, io_meta + 32 + 8, count + 1)  # one input more than the graph
    elif case == "arena":
        struct.pack_into("<I", out, 32 + 12, 1 << 30)  # the plan asks for 1 GiB
    return bytes(out)


@pytest.fixture(scope="module")
def host_runner(request) -> Path:
    """The CPU runner built for the host with ASan and UBSan (Debug)."""
    from tests.runtime.runtime_helpers import build_dir, cmake_build

    build = cmake_build(build_dir(request, "host-cpu-asan"), "host", "host",
                        "-DETHOSU_RT_RUNNER=cpu", "-DETHOSU_RT_SANITIZE=ON",
                        build_type="Debug", targets=("tosa_cpu_runner",))
    return build / "bin" / "tosa_cpu_runner"


CASES = [

    ("truncated", "cpu_end_stream: bytes left for the block header must be >= 32; got 16"),
    ("renamed", "cpu_graph: block name must be the next CPU artifact block"),
    ("io_count", "io_meta: input count (the graph's) must be 1; got 2"),
]


def test_the_linux_runner_sizes_its_arena_from_the_artifact(project, tmp_path):
    """No fixed limit on Linux: the arena is the plan's, heap-allocated at run time. A plan
    asking for 1 GiB (16 times the 64 MiB the runner once reserved) runs and gives the same
    output; one the memory cannot hold (QEMU's guest address space cut to 256 MiB, so malloc
    fails) is refused in one line."""
    runner = ["qemu-aarch64", str(project / "build" / "a53-cpu" / "tosa_cpu_runner")]
    data = (project / "build" / "a53-cpu" / "cnn" / "model.cpu.bin").read_bytes()
    (tmp_path / "big.bin").write_bytes(_damaged(data, "arena"))
    outputs = []
    for name, model in (("plan", project / "build" / "a53-cpu" / "cnn" / "model.cpu.bin"),
                        ("big", tmp_path / "big.bin")):
        proc = subprocess.run([*runner, "--model", str(model), "--output", name], check=False,
                              capture_output=True, text=True, cwd=tmp_path, timeout=60)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outputs.append((tmp_path / f"{name}-0.bin").read_bytes())
    assert "arena 1073741824 of 1073741824 bytes" in proc.stdout
    assert outputs[0] == outputs[1]
    proc = subprocess.run([runner[0], "-R", str(256 << 20), *runner[1:], "--model",
                           str(tmp_path / "big.bin")], check=False, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stdout.strip() == ("tosa_cpu_runner: error: arena (the memory plan's): "
                                   "1073741824 bytes must be allocatable; malloc failed")


@pytest.mark.parametrize("case, message", CASES)
def test_the_runner_refuses_a_damaged_artifact_in_one_line(project, tmp_path, case, message):
    data = (project / "build" / "a53-cpu" / "cnn" / "model.cpu.bin").read_bytes()
    (tmp_path / "bad.bin").write_bytes(_damaged(data, case))
    folder = project / "build" / "a53-cpu"
    proc = subprocess.run(["qemu-aarch64", str(folder / "tosa_cpu_runner"), "--model",
                           str(tmp_path / "bad.bin")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert re.fullmatch(r"tosa_cpu_runner: error: cpu_model\.cc:\d+: " + re.escape(message),
                        proc.stdout.strip()), proc.stdout


def test_the_runner_is_clean_under_asan_and_ubsan_on_the_host(project, host_runner, tmp_path):
    """Every model and every damaged artifact above through the host build with sanitizers:
    the same outputs as the aarch64 runner's, the same one-line refusals, nothing on stderr."""
    folder = project / "build" / "a53-cpu"
    runners = {"host": [str(host_runner)],
               "aarch64": ["qemu-aarch64", str(folder / "tosa_cpu_runner")]}
    for model in ("add", "cnn"):
        artifact = folder / model / "model.cpu.bin"
        for name, runner in runners.items():
            proc = subprocess.run([*runner, "--model", str(artifact), "--output", name],
                                  capture_output=True, text=True, cwd=tmp_path, timeout=120)
            assert proc.returncode == 0 and not proc.stderr, proc.stdout + proc.stderr
        assert (tmp_path / "host-0.bin").read_bytes() == (tmp_path / "aarch64-0.bin").read_bytes()
        for case, message in CASES:
            (tmp_path / "bad.bin").write_bytes(_damaged(artifact.read_bytes(), case))
            proc = subprocess.run([str(host_runner), "--model", str(tmp_path / "bad.bin")],
                                  capture_output=True, text=True, timeout=60)
            assert proc.returncode == 1 and not proc.stderr, proc.stderr
            assert message.split(" must ")[0] in proc.stdout, proc.stdout
