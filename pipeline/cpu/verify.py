"""CPU verify stage: run a CPU-only target's artifact under QEMU on the model's test inputs
and compare every output with the TOSA reference model, bit for bit.

Bare metal: the firmware (``tosa_cpu_runner.elf``, the artifact compiled in) boots on the
``qemu-system-arm`` machine of the target's CPU (``config/boards.py``) and reads its inputs
and writes its outputs through semihosting. Linux: ``qemu-aarch64 -cpu <cpu>`` runs the
static ``tosa_cpu_runner`` on the artifact. Each test sample is quantized as the verify
stage does it (the same integers the reference model gets) and handed over in torch's
layout; the runner transposes, runs every kernel and transposes back.

An output that differs fails the build. The runner is then run again operator by operator
(``--dump-ops``) and each operator's outputs are compared with the reference model's values
of the same TOSA tensors, so the error names the first operator that differs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from pipeline.errors import StageError, UserError

QEMU_TIMEOUT_S = 900  # one sample's run; a firmware that faults exits at once (status 99)
NUMPY = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "int32": np.int32,
         "bool": np.bool_, "float32": np.float32}
ITEM_TYPES = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


class CpuMismatch(UserError):
    """The CPU artifact's results differ from the TOSA reference model's."""


def _qemu_binary(qemu: str) -> str:
    return "qemu-aarch64" if qemu == "qemu-aarch64" else "qemu-system-arm"


@functools.lru_cache(maxsize=None)
def qemu_fingerprint(qemu: str) -> str:
    """Digest of ``<qemu binary> --version`` (part of the stage key)."""
    binary = _qemu_binary(qemu)
    if shutil.which(binary) is None:
        raise StageError("cpu_verify", f"{binary} must be installed (bootstrap.sh installs "
                         "qemu-system-arm and qemu-user); it was not found on PATH")
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True)
    return hashlib.sha256(out.stdout.encode()).hexdigest()


def _semihosting_arg(value: str) -> str:
    return "arg=" + value.replace(",", ",,")  # QEMU option values escape commas by doubling


def _runner_argv(inputs: dict, qemu: str, qemu_cpu: str, args: list[str],
                 icount: bool = False) -> list[str]:
    if qemu == "qemu-aarch64":
        return ["qemu-aarch64", "-cpu", qemu_cpu, str(inputs["runner"]), "--model",
                str(inputs["artifact"]), *args]
    semihosting = ",".join(["enable=on", "target=native", "arg=tosa_cpu_runner",
                            *map(_semihosting_arg, args)])
    # -icount shift=0: every instruction advances the virtual clock by 1 ns (deterministic).
    return ["qemu-system-arm", "-M", qemu, *(["-icount", "shift=0"] if icount else []),
            "-nographic", "-monitor", "none", "-semihosting-config", semihosting,
            "-kernel", str(inputs["firmware"])]


def _instructions(inputs: dict, qemu: str, args: list[str], work: Path, where: str) -> list:
    """Instructions each operator retires on the first test sample (bare metal: the runner's
    --profile under QEMU -icount, its SysTick ticks scaled by a calibration loop)."""
    out = _run(_runner_argv(inputs, qemu, "", [*args, "--profile"], icount=True), work, where)
    calibration = re.search(r"calibration: 2000000 instructions in (\d+) ticks", out)
    per_tick = 2_000_000 / max(int(calibration[1]), 1)
    return [round(int(ticks) * per_tick)
            for ticks in re.findall(r"^op \d+ \S+: (\d+) ticks", out, re.MULTILINE)]


def _run(argv: list[str], cwd: Path, where: str) -> str:
    try:
        result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                                timeout=QEMU_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise StageError(where, f"the CPU artifact must finish under QEMU within "
                         f"{QEMU_TIMEOUT_S} s; it did not", argv) from None
    except FileNotFoundError:
        raise StageError(where, f"{argv[0]} must be installed (bootstrap.sh); not found",
                         argv) from None
    if result.returncode != 0:
        raise StageError(where, f"the CPU artifact must run under QEMU; it exited "
                         f"{result.returncode}", argv, result.stdout + result.stderr)
    return result.stdout


def _torch_order(array: np.ndarray, entry: dict) -> np.ndarray:
    return np.transpose(array, np.argsort(entry["dim_order"])) if "dim_order" in entry else array


def _differ(got: np.ndarray, want: np.ndarray) -> tuple[int, int]:
    """(values that differ, largest difference) of two integer arrays of one shape."""
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    return int(np.count_nonzero(diff)), int(diff.max(initial=0))


def _first_differing_op(inputs: dict, feed: dict, args: list[str], plan: dict, io: dict,
                        work: Path, opts: dict, where: str) -> dict | None:
    """Run the artifact one operator at a time and find the first whose outputs differ."""
    from pipeline.tosa.flatbuffer import with_outputs
    from pipeline.verify.reference_model import run_reference_model

    graph_inputs = {e.get("tosa_name", e["name"]) for e in io["inputs"]}
    names = list(dict.fromkeys(t for op in plan["operators"] for t in op["outputs"]
                               if t not in graph_inputs))
    debug = work / "all_outputs.tosa"
    debug.write_bytes(with_outputs(Path(inputs["tosa"]), names))
    reference = run_reference_model(debug, feed, names, where=where)
    _run(_runner_argv(inputs, opts["qemu"], opts["qemu_cpu"], [*args, "--dump-ops", "op"]),
         work, where)
    for op in plan["operators"]:
        for j, tensor in enumerate(op["outputs"]):
            want = np.asarray(reference[tensor])
            raw = (work / f"op-{op['index']}-{j}.bin").read_bytes()
            item = len(raw) // max(want.size, 1)
            got = np.frombuffer(raw, ITEM_TYPES.get(item, np.uint8)).reshape(want.shape)
            count, largest = _differ(got, want)
            if count:
                return {"index": op["index"], "op": op["op"], "tensor": tensor,
                        "values_differing": count, "values": int(want.size),
                        "max_abs_diff": largest}
    return None


def _write_inputs(io: dict, feed: dict, sample: int, work: Path) -> list[str]:
    """The sample's quantized inputs as raw files in torch's layout; their names."""
    files = []
    for k, entry in enumerate(io["inputs"]):
        array = _torch_order(feed[entry.get("tosa_name", entry["name"])], entry)
        files.append(f"in-{sample}-{k}.bin")
        (work / files[-1]).write_bytes(np.ascontiguousarray(array, NUMPY[entry["dtype"]]).tobytes())
    return files


def _compare_outputs(io: dict, want: dict, prefix: Path, outputs: list[dict]) -> None:
    """Add one sample's comparison of the runner's outputs (``<prefix>-<i>.bin``) with the
    reference model's to the per-output counts."""
    for i, entry in enumerate(io["outputs"]):
        expected = _torch_order(np.asarray(want[entry["name"]]), entry)
        raw = Path(f"{prefix}-{i}.bin").read_bytes()
        got = np.frombuffer(raw, NUMPY[entry["dtype"]]).reshape(expected.shape)
        count, largest = _differ(got, expected)
        outputs[i]["values"] += int(expected.size)
        outputs[i]["values_differing"] += count
        outputs[i]["max_abs_diff"] = max(outputs[i]["max_abs_diff"], largest)


def cpu_verify(inputs: dict, report: Path, *, qemu: str, qemu_cpu: str, cpu: str,
               substitute: str | None, where: str = "") -> Path:
    """Run the CPU artifact under QEMU on every test sample against the reference model.

    Args:
        inputs: ``firmware`` (bare metal) or ``runner`` + ``artifact`` (Linux); ``tosa``,
            ``io``, ``plan`` (``cpu_plan.json``) and ``test_inputs``.
        report: where ``cpu_verify.json`` goes.
        qemu: the ``qemu-system-arm`` machine, or ``qemu-aarch64``.
        qemu_cpu: the CPU QEMU emulates (``-cpu`` for ``qemu-aarch64``).
        cpu: the target's CPU.
        substitute: why QEMU runs another CPU than the target's, else None.
        where: ``target/stage`` for error messages.
    Returns:
        ``report``.
    Raises:
        CpuMismatch: an output differs; names the first differing operator.
        StageError: QEMU or the reference model failed.
    """
    import torch

    import pipeline.programs  # noqa: F401  (registers the q/dq ops _feeds quantizes with)
    from pipeline.files import write_atomic
    from pipeline.verify.check import _feeds

    io = json.loads(Path(inputs["io"]).read_text())
    plan = json.loads(Path(inputs["plan"]).read_text())
    samples = torch.load(inputs["test_inputs"], weights_only=True)
    feeds = _feeds(io, samples)
    outputs, cost = run_feeds(inputs, io, plan, feeds, qemu=qemu, qemu_cpu=qemu_cpu,
                              where=where)
    record = {"passed": True, "check": "bit-exact against the TOSA reference model",
              "cpu": cpu, "qemu": qemu, "qemu_cpu": qemu_cpu, "substitute": substitute,
              "samples": len(feeds), "outputs": outputs,
              "operators": len(plan["operators"]), "arena_bytes": plan["arena_bytes"],
              # Bare metal: instructions retired per operator under QEMU -icount on the first
              # sample (the estimate of cost on the target's ISA); Linux: None (user-mode
              # QEMU has no instruction clock).
              "instructions": sum(cost) if cost else None, "op_instructions": cost}
    write_atomic(Path(report), json.dumps(record, indent=2).encode())
    return Path(report)


def run_feeds(inputs: dict, io: dict, plan: dict, feeds: list[dict], *, qemu: str,
              qemu_cpu: str, where: str = "") -> tuple[list[dict], list | None]:
    """Run the CPU artifact under QEMU on each feed (TOSA input name -> integers) and compare
    its outputs with the reference model's run of ``inputs["tosa"]``, bit for bit.

    Returns:
        Per output its comparison figures, and the instructions per operator on the first
        feed (bare metal; None on Linux).

    Raises:
        CpuMismatch: an output differs; names the first differing operator.
    """
    from pipeline.verify.reference_model import run_reference_model

    out_names = [e["name"] for e in io["outputs"]]
    opts = {"qemu": qemu, "qemu_cpu": qemu_cpu}
    outputs = [{"name": n, "values": 0, "values_differing": 0, "max_abs_diff": 0}
               for n in out_names]
    cost = None
    with tempfile.TemporaryDirectory(prefix="cpu-verify-") as tmp:
        work = Path(tmp)
        for s, feed in enumerate(feeds):
            args = ["--input", ",".join(_write_inputs(io, feed, s, work)), "--output", f"out-{s}"]
            _run(_runner_argv(inputs, qemu, qemu_cpu, args), work, where)
            want = run_reference_model(Path(inputs["tosa"]), feed, out_names, where=where)
            _compare_outputs(io, want, work / f"out-{s}", outputs)
            bad = next((o for o in outputs if o["values_differing"]), None)
            if bad is not None:
                first = _first_differing_op(inputs, feed, args, plan, io, work, opts, where)
                _fail(where, bad, s, first, qemu, qemu_cpu)
            if s == 0 and "firmware" in inputs:
                cost = _instructions(inputs, qemu, args, work, where)
    return outputs, cost


def _fail(where: str, output: dict, sample: int, first: dict | None, qemu: str,
          qemu_cpu: str) -> None:
    text = (f"{where}: every output of the CPU artifact must equal the TOSA reference model's "
            f"bit for bit; output '{output['name']}' differs in {output['values_differing']} "
            f"values (max |diff| {output['max_abs_diff']}) on test sample {sample} under "
            f"QEMU {qemu} ({qemu_cpu})")
    if first is not None:
        text += (f"; the first operator that differs is #{first['index']} {first['op']} "
                 f"(writes '{first['tensor']}': {first['values_differing']} of "
                 f"{first['values']} values, max |diff| {first['max_abs_diff']})")
    else:
        text += "; run operator by operator, every operator matched (an IO layout fault)"
    raise CpuMismatch(text)
