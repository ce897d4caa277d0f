"""End to end: `doit build` of an Ethos-U55 target with CPU fallback (``npu: {fallback:
cpu}``) on a model with an operator the U55 cannot place (an int16 MATMUL), with the real
torch, tosa-tools, Vela, kernel library, Arm GCC and QEMU (the CPU segment checked bit-exact
on the Cortex-M55 under mps3-an547); the same model without fallback still failing with the
named blocker; the runtime's sequence runner on the built artifact (host build, MOCK NPU). One
module-scoped project (and store)."""

from __future__ import annotations

import json
import re
import struct
import subprocess
from pathlib import Path

import pytest

from pipeline.cpu.artifact import BLOCKS as CPU_BLOCKS
from pipeline.ethosu.mixed import SEQUENCE_HEADER, SEQUENCE_MAGIC, SEQUENCE_VERSION
from pipeline.artifact import HEADER, pad16
from pipeline.ethosu.package import BLOCK_ORDER, read_artifact
from tests.e2e.runner import ROOT, doit

MODEL = Path(__file__).with_name("mixed_models") / "scores.py"

pytestmark = [pytest.mark.slow, pytest.mark.needs_torch, pytest.mark.needs_vela,
              pytest.mark.needs_tosa_ref, pytest.mark.needs_arm_gcc, pytest.mark.needs_qemu]

TARGETS = f"""\
models:
  scores:
    source: {MODEL}:Scores
    inputs: [{{name: tokens, shape: [1, 8, 16]}}]  # renamed: the graph's tensor stays x
    calibration: {{samples: 4, seed: 1}}
defaults:
  quantization: a16w8
  models: [scores]
targets:
  u55-fallback:
    cpu: cortex-m55
    npu: {{config: ethos-u55-128, fallback: cpu}}
  u55-strict:
    cpu: cortex-m55
    npu: {{config: ethos-u55-128}}
  u55-fallback-fake-sdk:
    extends: u55-fallback
    ethosu_sdk: {ROOT / "tests" / "runtime" / "cortex_m" / "fake_sdk"}
  u65-linux-fallback:
    cpu: cortex-a53
    npu: {{config: ethos-u65-256, fallback: cpu}}
"""




@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mixed-project")
    (root / "targets.yaml").write_text(TARGETS)
    return root


@pytest.fixture(scope="module")
def built(project) -> subprocess.CompletedProcess:
    return doit(project, "build", "target=u55-fallback")


def _blocks(data: bytes) -> list[tuple[str, bytes]]:
    """The artifact's blocks in order, every bound checked."""
    blocks, pos = [], 0
    while pos < len(data):
        name, size, external, _ = HEADER.unpack_from(data, pos)
        assert not external and pos + HEADER.size + size <= len(data)
        start = pos + HEADER.size
        blocks.append((name.rstrip(b"\0").decode(), data[start:start + size]))
        pos += HEADER.size + pad16(size)
    return blocks


def test_fallback_report_names_the_cpu_operators_and_their_reason(project, built):
    report = json.loads((project / "build" / "u55-fallback" / "report.json").read_text())
    entry = report["models"]["scores"]
    mixed = entry["mixed"]
    cpu = [o for o in mixed["operators"] if o["runs_on"] == "cpu"]
    assert [o["op"] for o in cpu] == ["MATMUL", "RESCALE"]
    assert "must take int8 inputs; got int16, int16" in cpu[0]["reason"]
    assert "reads int48 tensor" in cpu[1]["reason"]
    assert [s["runs_on"] for s in mixed["segments"]] == ["npu", "cpu", "npu"]
    # Costs: Vela's cycles per NPU segment; instructions under QEMU -icount for the CPU one.
    npu, cpu_segment = mixed["segments"][0], mixed["segments"][1]
    assert npu["cycles"] == npu["vela"]["cycles_total"] > 0
    assert npu["vela"]["cpu_operators"] == 0
    check = entry["mixed_verify"]
    assert check["passed"] and (check["qemu"], check["qemu_cpu"]) == ("mps3-an547", "cortex-m55")
    measured = check["segments"][0]
    assert measured["segment"] == 1 and measured["operators"] == ["MATMUL", "RESCALE"]
    assert all(o["values"] > 0 and o["values_differing"] == 0 for o in measured["outputs"])
    assert cpu_segment["instructions"] == sum(measured["op_instructions"]) > 0
    assert "cost_reason" not in cpu_segment
    # The border tensors carry their types and shapes (the MATMUL's int16 operands).
    tensors = {t["tosa_name"]: t for t in mixed["tensors"]}
    assert (tensors["x"]["name"], mixed["tensors"][0]["tosa_name"]) == ("tokens", "x")
    for name in cpu_segment["inputs"]:
        assert tensors[name]["dtype"] == "int16" and tensors[name]["bytes"] > 0
    assert "mixed: NPU 13 ops in 2 segment(s)" in built.stdout
    assert re.search(r"CPU 2 ops in 1 segment\(s\) \(MATMUL, RESCALE; [\d,]+ instructions\)",
                     built.stdout)
    assert "CPU segments under QEMU mps3-an547 (cortex-m55): bit-exact" in built.stdout


def test_fallback_artifact_holds_the_sequence(project, built):
    """The sequence artifact parses: the sequence block's version and segments, then each
    segment's blocks in order (Python parser; the C++ runners do not read it yet)."""
    data = (project / "build" / "u55-fallback" / "scores" / "model.bin").read_bytes()
    blocks = _blocks(data)
    name, payload = blocks[0]
    assert name == "sequence"
    magic, version, segments, tensors, _ = SEQUENCE_HEADER.unpack_from(payload)
    assert (magic, version, segments) == (SEQUENCE_MAGIC, SEQUENCE_VERSION, 3)
    names = [n for n, _ in blocks[1:]]
    assert names == ["npu_segment", "cpu_segment", "npu_segment", "io_meta", "sequence_end"]
    # Each segment is a whole artifact of its own kind.
    npu = read_artifact(blocks[1][1])
    assert list(npu) == list(BLOCK_ORDER) and len(npu["cmd_data"]) > 0
    cpu = read_artifact(blocks[2][1], CPU_BLOCKS)
    assert cpu["cpu_graph"][:4] == b"TCPU"
    kinds = []
    pos = SEQUENCE_HEADER.size + tensors * struct.calcsize("<32sII6iI")
    for _ in range(segments):
        kind, n_in, n_out = struct.unpack_from("<III", payload, pos)
        kinds.append(kind)
        pos += 12 + 4 * (n_in + n_out)
    assert kinds == [0, 1, 0] and pos == len(payload)


def test_without_fallback_the_same_model_fails_naming_the_blocker(project, built):
    proc = doit(project, "build", "target=u55-strict", ok=False)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert ("operator(s) outside the ethos-u55-128 constraints of Vela (this target has no "
            "CPU fallback)") in text
    assert "TOSA MATMUL on ethos-u55-128 must take int8 inputs; got int16, int16" in text
    assert "Traceback" not in text


@pytest.fixture(scope="module")
def mock_runner(request) -> Path:
    """The host build of the runtime's mock-NPU sequence runner (tests/runtime/sequence)."""
    from tests.runtime.runtime_helpers import build_dir, cmake_build

    build = cmake_build(build_dir(request, "host-sequence"), "host", "host",
                        "-DETHOSU_RT_BUILD_TESTS=ON", build_type="Debug",
                        targets=("mock_npu_sequence_runner", "ethosu_runner"))
    return build / "bin" / "mock_npu_sequence_runner"


def test_linux_runner_parses_the_sequence_and_needs_the_npu(project, built, mock_runner,
                                                            tmp_path):
    """The Linux runner (host build) reads the sequence artifact, checks every segment, says
    what it runs, and stops in one line at the NPU device it needs (none here)."""
    runner = mock_runner.with_name("ethosu_runner")
    model = project / "build" / "u55-fallback" / "scores" / "model.bin"
    proc = subprocess.run([runner, "--model", model, "--device", tmp_path / "accel9"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "sequence: 3 segments (NPU, CPU, NPU), arena " in proc.stdout
    assert proc.stderr.count("\n") == 1 and "accel9: open() of the NPU device node" in proc.stderr
    damaged = bytearray(model.read_bytes())
    damaged[36:38] = (2).to_bytes(2, "little")  # the sequence block's version field
    (tmp_path / "v2.bin").write_bytes(bytes(damaged))
    proc = subprocess.run([runner, "--model", tmp_path / "v2.bin"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "sequence.cc:" in proc.stderr and "sequence: version must be 1; got 2" in proc.stderr


def test_firmware_with_fake_core_driver_runs_the_sequence_under_qemu(project, built):
    """Bare metal: the runner built with the sequence compiled in, linked against a FAKE
    Ethos-U core driver (QEMU has no NPU: the NPU segments' arithmetic does not happen),
    runs all three segments, its CPU segment on the kernel library, on the Cortex-M55
    MPS3 AN547 machine and exits 0. It proves the plumbing, not the NPU's numbers."""
    proc = doit(project, "build", "target=u55-fallback-fake-sdk")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    elf = project / "build" / "u55-fallback-fake-sdk" / "scores" / "ethosu_runner.elf"
    run = subprocess.run(["qemu-system-arm", "-M", "mps3-an547", "-nographic",
                          "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "sequence: 3 segments (NPU, CPU, NPU), arena " in run.stdout
    assert re.search(r"output 0 'linear_2': 128 bytes", run.stdout)


def test_sequence_runs_with_mock_npu_cpu_segment_bit_exact(project, built, mock_runner,
                                                           tmp_path):
    """The runtime's SequenceRunner runs the built artifact on a test sample: its CPU segment
    for real (tosa_cpu, host build), its NPU segments through a MOCK NPU (no Ethos-U here)
    that checks it receives the TOSA reference model's values and returns them. So the CPU
    segment's output reaches the next NPU segment bit-exact, and the graph output is the
    reference model's."""
    import numpy as np
    import torch

    import pipeline.programs  # noqa: F401  (registers the q/dq ops _feeds uses)
    from pipeline.cpu.verify import NUMPY, _torch_order, _write_inputs
    from pipeline.verify.check import _feeds
    from pipeline.tosa.flatbuffer import with_outputs
    from pipeline.verify.reference_model import run_reference_model

    folder = project / "build" / "u55-fallback" / "scores"
    io = json.loads((folder / "io.json").read_text())
    mixed = json.loads((folder / "mixed.json").read_text())
    samples = torch.load(next((project / "build" / ".stages" / "export").rglob("test_inputs.pt")),
                         weights_only=True)
    feed = _feeds(io, samples)[0]
    names = [t["tosa_name"] for t in mixed["tensors"]]
    debug = tmp_path / "debug.tosa"
    debug.write_bytes(with_outputs(folder / "model.tosa", names))
    values = {**feed, **run_reference_model(debug, feed, names)}
    (tmp_path / "ref").mkdir()
    for t in mixed["tensors"]:
        array = np.ascontiguousarray(values[t["tosa_name"]], NUMPY[t["dtype"]])
        (tmp_path / "ref" / f"{t['name']}.bin").write_bytes(array.tobytes())
    inputs = _write_inputs(io, feed, 0, tmp_path)
    proc = subprocess.run([mock_runner, "--model", folder / "model.bin", "--input",
                           ",".join(str(tmp_path / f) for f in inputs), "--reference",
                           tmp_path / "ref", "--output", tmp_path / "out"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    cpu_outputs = mixed["segments"][1]["outputs"]
    assert f"segment 2 (NPU, mock) input '{cpu_outputs[0]}': bit-exact" in proc.stdout
    entry = io["outputs"][0]
    got = np.fromfile(tmp_path / "out-0.bin", NUMPY[entry["dtype"]])
    want = _torch_order(values[entry["name"]], entry).reshape(-1)
    assert np.array_equal(got, want)


@pytest.mark.needs_aarch64_gcc
def test_linux_target_checks_its_cpu_segment_under_qemu_aarch64(project, built, tmp_path):
    """Cortex-A53 + Ethos-U65 (Linux direct drive): the same split, the CPU segment checked
    bit-exact in the Linux CPU runner under qemu-aarch64 (no instruction clock there: the
    report says why there is no cost), and the target's own aarch64 ethosu_runner reads the
    artifact and stops in one line at the NPU device it needs."""
    proc = doit(project, "build", "target=u65-linux-fallback")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CPU segments under QEMU qemu-aarch64 (cortex-a53): bit-exact" in proc.stdout
    folder = project / "build" / "u65-linux-fallback"
    report = json.loads((folder / "report.json").read_text())["models"]["scores"]
    cpu = report["mixed"]["segments"][1]
    assert cpu["instructions"] is None and "no instruction clock" in cpu["cost_reason"]
    run = subprocess.run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", folder / "ethosu_runner",
                          "--model", folder / "scores" / "model.bin", "--device",
                          tmp_path / "accel9"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert "sequence: 3 segments (NPU, CPU, NPU), arena " in run.stdout
    assert run.stderr.count("\n") == 1 and "accel9: open() of the NPU device node" in run.stderr


def test_a_wrong_cpu_segment_fails_naming_its_first_differing_operator(project, built,
                                                                       tmp_path):
    """mixed_verify on the built artifact with the CPU segment's RESCALE multiplier changed
    (a kernel or encoding fault): the build would stop naming the segment, the sample and the
    first differing operator (run one operator at a time under QEMU)."""
    from pipeline.config.boards import BOARDS
    from pipeline.cpu.graph_format import CONSTANT, DTYPES, TENSOR
    from pipeline.cpu.graph_format import HEADER as TCG
    from pipeline.cpu.verify import CpuMismatch
    from pipeline.ethosu.mixed_verify import mixed_verify

    stage = next((project / "build" / ".stages" / "mixed").rglob("mixed.json")).parent
    data = bytearray((stage / "model.bin").read_bytes())
    start = data.index(b"cpu_segment") + HEADER.size  # the CPU artifact's first block ...
    graph = start + HEADER.size  # ... is cpu_graph: the .tcg starts after its header
    fields = TCG.unpack_from(data, graph)
    count, table, constants = fields[4], fields[5], fields[13]
    for i in range(count):
        dtype, _, *rest = TENSOR.unpack_from(data, graph + table + i * TENSOR.size)
        storage, offset = rest[6], rest[7]
        # RESCALE's multiplier: 16-bit for an int48 input (the MATMUL's accumulator).
        if storage == CONSTANT and dtype == DTYPES["int16"]:
            at = graph + constants + offset
            value = struct.unpack_from("<h", data, at)[0]
            struct.pack_into("<h", data, at, value // 2)
            break
    else:
        pytest.fail("the CPU segment must have an int16 constant (RESCALE's multiplier)")
    (tmp_path / "model.bin").write_bytes(bytes(data))
    board = BOARDS["cortex-m55"]
    options = {"toolchain": "arm-none-eabi-gcc", "cpu": "cortex-m55", "isa": "mve",
               "platform": "cortex_m", "build_type": "Release", "board": board.board,
               "qemu": board.qemu, "qemu_cpu": board.qemu_cpu, "substitute": None}
    test_inputs = next((project / "build" / ".stages" / "export").rglob("test_inputs.pt"))
    placement = next((project / "build" / ".stages" / "lower" / "scores").rglob("placement.json"))
    inputs = {"artifact": tmp_path / "model.bin", "record": stage / "mixed.json",
              "tosa": project / "build" / "u55-fallback" / "scores" / "model.tosa",
              "placement": placement,
              "io": project / "build" / "u55-fallback" / "scores" / "io.json",
              "test_inputs": test_inputs}
    with pytest.raises(CpuMismatch, match=r"t/mixed_verify segment 1 \(CPU\): every output .* "
                                          r"output 'matmul_rescaled' differs .* test sample 0 .*"
                                          r"the first operator that differs is #1 RESCALE"):
        mixed_verify(inputs, tmp_path / "report.json", options=options,
                     cmake_dir=tmp_path / "cmake", where="t/mixed_verify")
    assert not (tmp_path / "report.json").exists()
