#!/usr/bin/env python3
"""Operator parity with ExecuTorch's Arm backend: its own operator test cases through our stages.

Usage: .venv/bin/python benchmarks/bench_op_parity.py [--jobs 2] [--filter REGEX] [--json OUT]
           [--cache build/op_parity/cases] [--recollect] [--timeout 120]

1. Collect (once; cached in ``--cache``): ``op_parity_collect.py`` runs under
   ``.venv-executorch`` (``benchmarks/setup_executorch.sh``) and records every INT case of the
   reference's ``backends/arm/test/ops/test_*.py`` - module and inputs as a saved
   ``torch.export`` program, the pipeline (TOSA INT, Ethos-U55, -U85), the quantization it
   asks for, and what the reference expects: ``pass``, ``xfail``/``skip`` (marked so), or
   ``cpu`` (an ``OpNotSupportedPipeline``: the reference leaves the operator on the CPU).
2. Run: each case through the build's own stage functions - export_program (normalise),
   quantize (int8 or a16w8, the case's inputs as calibration), lower (TOSA-1.0+INT+int16, a
   target's default spec, with the NPU variants), verify (the graph a target compiles), and for Ethos-U cases the NPU constraint check and Vela
   (ethos-u55-128 / ethos-u85-256). Cases of one program and scheme share the stages up to
   lower; each group runs in a worker process with a time limit (a hang kills the worker).

Outcomes: ``passed`` (lowered, verified, placed), ``blocked`` (an UnsupportedOperatorError:
named operator and line), ``npu rule`` (our pre-Vela check named the operator and rule),
``float program`` (the quantizer left every node float), ``vela error``, ``wrong result``
(verification failed), ``traceback`` (any other exception; its innermost frame),
``error`` (another user error, e.g. torch.export), ``timeout``, ``not exported`` (the
collector could not export the case). Prints per-target and per-family counts beside the
reference's own expected shares.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KINDS = ("tosa", "u55", "u85")  # u65 cases (two) are collected but not run
ACCELERATORS = {"u55": "ethos-u55-128", "u85": "ethos-u85-256"}
# What the reference expects to pass on each target, as issue 10 measured it.
ISSUE_SHARES = {"tosa": 0.92, "u55": 0.59, "u85": 0.74}
OUTCOMES = ("passed", "blocked", "npu rule", "float program", "vela error", "wrong result",
            "traceback", "error", "timeout", "not exported")
# Test file stem -> family (first match), for the per-family table.
FAMILIES = (
    ("convolution", r"conv|depthwise"),
    ("pooling", r"pool"),
    ("resize", r"upsample|grid_sampler|pixel"),
    ("matmul", r"matmul|^test_mm|bmm|addmm|linear$|attention|sdpa"),
    ("norm", r"norm|softmax|glu"),
    ("reduction", r"sum|mean|amax|amin|argmax|any|all$|var|prod|cumsum"),
    ("pad", r"pad"),
    ("control flow", r"cond|while"),
    ("creation/cast", r"zeros|ones|full|eye|scalar_tensor|arange|fill|to_copy|scalars"),
    ("indexing", r"index|gather|embedding|scatter|unfold|select|slice|where|masked"),
    ("data movement", r"flip|repeat|expand|stack|unflatten|cat|split|unbind|squeeze|view"
                      r"|permute|transpose|t_copy|alias|as_strided|detach|clone|copy|tril|at$"),
    ("elementwise", r"."),
)


def family(file: str) -> str:
    stem = file.removeprefix("test_")
    return next(name for name, pattern in FAMILIES if re.search(pattern, stem))


# --- the worker: one group of cases (one program, one scheme) through our stages ----------


def _innermost(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    ours = [f for f in frames if "/pipeline/" in f.filename]
    frame = frames[-1]
    text = f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}"
    if ours and ours[-1] is not frame:
        text += f" (ours: {Path(ours[-1].filename).name}:{ours[-1].lineno} in {ours[-1].name})"
    return text


def _vela_summary(text: str) -> str:
    """The line of Vela's output that says what failed."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for pattern in ("could not run on NPU", "Error", "error", "Exception"):
        hit = next((ln for ln in lines if pattern in ln and not ln.startswith("command:")), None)
        if hit:
            return re.sub(r"'[^']*'", "'…'", hit)[:160]
    return lines[0][:160] if lines else ""


def classify(exc: BaseException, stage: str) -> dict:
    """The outcome of a case that raised ``exc`` in ``stage``."""
    from pipeline.errors import (
        StageError,
        UnsupportedOperatorError,
        UserError,
        VerificationError,
    )

    message = str(exc)
    found = {"stage": stage, "message": message[:2000]}
    if isinstance(exc, UnsupportedOperatorError):
        blockers = getattr(exc, "blockers", [exc])
        return {**found, "outcome": "blocked", "ops": sorted({b.op for b in blockers})}
    if isinstance(exc, VerificationError):
        return {**found, "outcome": "wrong result"}
    if isinstance(exc, StageError) and stage == "vela":
        return {**found, "outcome": "vela error", "summary": _vela_summary(message)}
    if isinstance(exc, UserError) and stage == "vela":
        rules = re.findall(r"TOSA (\w+) on [\w-]+ must ([^;(]+)", message)
        return {**found, "outcome": "npu rule",
                "ops": sorted({f"{op}: {rule.strip()}" for op, rule in rules})}
    if isinstance(exc, UserError) and "got a float program" in message:
        return {**found, "outcome": "float program"}
    if isinstance(exc, UserError):
        return {**found, "outcome": "error", "summary": message.splitlines()[0][:200]}
    return {**found, "outcome": "traceback", "message": f"{type(exc).__name__}: {message}"[:2000],
            "frame": _innermost(exc)}


class Failed(Exception):
    def __init__(self, outcome: dict):
        self.outcome = outcome


def _stage(name: str, func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - every failure is an outcome
        raise Failed(classify(exc, name)) from exc


# A target's default spec (every Ethos-U has int16), for every case: the reference's integer
# cases (bitwise ops on int16 tensors) need it too.
SPEC = "TOSA-1.0+INT+int16"


def _flat_module(module, inputs: tuple):
    """``module`` taking the tensors of ``inputs`` alone, flat (as the build feeds a model):
    nested inputs are rebuilt and non-tensor ones (numbers) bound as constants."""
    import torch
    from torch.utils import _pytree

    leaves, spec = _pytree.tree_flatten(inputs)
    tensors = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    if len(tensors) == len(leaves) and all(isinstance(x, torch.Tensor) for x in inputs):
        return module, inputs

    class Flat(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = module

        def forward(self, *flat):
            values = list(leaves)
            for i, x in zip(tensors, flat):
                values[i] = x
            return self.inner(*_pytree.tree_unflatten(values, spec))

    return Flat(), tuple(leaves[i] for i in tensors)


def _prepare(group: dict, programs: Path, work: Path) -> None:
    """What the export and quantize stages write, from the collected program."""
    import torch

    from pipeline.programs import save_program
    from pipeline.chain.export import export as export_program
    from pipeline.stages.quantize import quantize

    key, where = group["program"], f"{group['program']}/"
    program = _stage("load", torch.export.load, programs / f"{key}.pt2")
    inputs = tuple(torch.load(programs / f"{key}.inputs.pt", weights_only=False))
    module, inputs = _flat_module(program.module(check_guards=False), inputs)
    exported = _stage("export", export_program, module, inputs, where + "export")
    save_program(exported, work / "model.pt2")
    torch.save([inputs], work / "calibration.pt")
    torch.save([inputs], work / "test_inputs.pt")
    _stage("quantize", quantize, work / "model.pt2", work / "calibration.pt",
           work / "quantized.pt2", scheme=group["scheme"],
           weights=group.get("weights", "per_channel"), where=where + "quantize")


def _lower(spec: str, variants: list[str], work: Path, key: str) -> Path:
    from pipeline.stages.lower import lower

    folder = work / spec.replace("+", "_")
    folder.mkdir(exist_ok=True)
    paths = {v: folder / f"model.{v}.tosa" for v in variants}
    _stage("lower", lower, work / "quantized.pt2", folder / "model.tosa", folder / "io.json",
           spec=spec, variants=paths, where=f"{key}/lower")
    return folder


def _verify(graph: Path, folder: Path, work: Path, key: str) -> None:
    from pipeline.verify.check import verify

    _stage("verify", verify, work / "model.pt2", work / "quantized.pt2", graph,
           folder / "io.json", work / "test_inputs.pt", folder / f"{graph.stem}.report.json",
           where=f"{key}/verify")


def _vela(graph: Path, kind: str, folder: Path, key: str) -> None:
    from pipeline.config.npu import NpuConfig
    from pipeline.ethosu.vela import run_vela

    args = NpuConfig(config=ACCELERATORS[kind]).vela_args()
    _stage("vela", run_vela, graph, folder / f"vela_{kind}", args, where=f"{key}/vela")


def run_target(kind: str, group: dict, work: Path, lowered: dict) -> dict:
    """One target's outcome: lower (shared per spec), verify its graph, Vela for an NPU."""
    key, spec = group["program"], SPEC
    try:
        if spec not in lowered:
            try:
                lowered[spec] = _lower(spec, [k for k in ACCELERATORS], work, key)
            except Failed as failed:
                lowered[spec] = failed
        if isinstance(lowered[spec], Failed):
            raise lowered[spec]
        folder = lowered[spec]
        graph = folder / ("model.tosa" if kind == "tosa" else f"model.{kind}.tosa")
        _verify(graph, folder, work, key)
        if kind in ACCELERATORS:
            _vela(graph, kind, folder, key)
    except Failed as failed:
        return failed.outcome
    return {"outcome": "passed"}


def run_group(group: dict, programs: Path) -> dict[str, dict]:
    """Every case of a group -> its outcome record."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="op-parity-") as tmp:
        work = Path(tmp)
        try:
            _prepare(group, programs, work)
        except Failed as failed:
            return {case: failed.outcome for case in group["cases"]}
        lowered, by_kind = {}, {}
        for kind in sorted(set(group["cases"].values())):
            by_kind[kind] = run_target(kind, group, work, lowered)
    seconds = round(time.perf_counter() - started, 2)
    return {case: {**by_kind[kind], "group_seconds": seconds}
            for case, kind in group["cases"].items()}


def worker(programs: Path) -> int:
    """Read groups (JSON lines) on stdin, answer each with one JSON line on the original
    stdout; whatever the stages print goes to stderr."""
    import torch

    torch.set_num_threads(1)
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    for line in sys.stdin:
        group = json.loads(line)
        try:
            results = run_group(group, programs)
        except Exception as exc:  # noqa: BLE001 - a bug in this script's own code
            outcome = classify(exc, "bench")
            results = {case: outcome for case in group["cases"]}
        answer.write(json.dumps(results) + "\n")
        answer.flush()
    return 0


# --- the driver: collection, worker processes, report -----------------------------------


def collect(cache: Path, recollect: bool, pattern: str | None) -> dict:
    index = cache / "index.json"
    if index.exists() and not recollect:
        found = json.loads(index.read_text())
        if found.get("filter") in (None, pattern):
            return found
    python = ROOT / ".venv-executorch" / "bin" / "python"
    if not python.exists():
        print(f"bench_op_parity: collecting needs {python}: run benchmarks/setup_executorch.sh")
        sys.exit(2)
    print(f"collecting the reference's operator tests into {cache} ...", flush=True)
    command = [str(python), str(ROOT / "benchmarks" / "op_parity_collect.py"), str(cache)]
    if pattern:
        command += ["--filter", pattern]
    with open(cache.parent / "collect.log", "w") as log:
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT)
    return json.loads(index.read_text())


def make_groups(cases: list[dict]) -> list[dict]:
    """Cases of one program, scheme and weight granularity share export, quantize and lower."""
    groups: dict[tuple, dict] = {}
    for case in cases:
        scheme = case["quantization"]["scheme"]
        weights = case["quantization"].get("weights", "per_channel")
        group = groups.setdefault((case["program"], scheme, weights),
                                  {"program": case["program"], "scheme": scheme,
                                   "weights": weights, "cases": {}})  # fmt: skip
        group["cases"][case["id"]] = case["kind"]
    return list(groups.values())


class Worker:
    """A worker process; killed with its process group (Vela included) when it overruns."""

    def __init__(self, programs: Path, log):
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(programs)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
        self.group, self.deadline, self.served = None, None, 0

    def send(self, group: dict, limit: float) -> None:
        self.group, self.deadline = group, time.monotonic() + limit
        self.proc.stdin.write(json.dumps(group) + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def run_all(groups: list[dict], programs: Path, jobs: int, timeout: float, log,
            progress) -> dict[str, dict]:
    """Every group on ``jobs`` workers; a group past its limit is a timeout, a worker that
    dies a traceback."""
    pending, results = collections.deque(groups), {}
    selector, workers = selectors.DefaultSelector(), []
    recycle = 40  # groups per worker: torch and Vela keep memory they never give back

    def finish(worker: Worker, outcome: dict | None, answer: dict | None = None) -> None:
        answer = answer or {case: outcome for case in worker.group["cases"]}
        results.update(answer)
        worker.group = None
        progress(len(results))

    def replace(worker: Worker) -> None:
        selector.unregister(worker.proc.stdout)
        worker.stop()
        workers.remove(worker)

    while pending or any(w.group for w in workers):
        while pending and (len(workers) < jobs or any(w.group is None for w in workers)):
            idle = next((w for w in workers if w.group is None), None)
            if idle is None:
                idle = Worker(programs, log)
                workers.append(idle)
                selector.register(idle.proc.stdout, selectors.EVENT_READ, idle)
            group = pending.popleft()
            idle.send(group, timeout * len(set(group["cases"].values())))
        busy = [w for w in workers if w.group]
        wait = max(0.0, min(w.deadline for w in busy) - time.monotonic())
        for key, _ in selector.select(timeout=wait):
            worker = key.data
            line = worker.proc.stdout.readline()
            if not line:
                code = worker.proc.poll()
                finish(worker, {"outcome": "traceback", "stage": "worker",
                                "message": f"the worker process died (exit {code})",
                                "frame": "worker process"})
                replace(worker)
                continue
            finish(worker, None, json.loads(line))
            worker.served += 1
            if worker.served >= recycle:
                replace(worker)
        for worker in [w for w in workers if w.group and time.monotonic() > w.deadline]:
            finish(worker, {"outcome": "timeout", "stage": "?",
                            "message": f"over {timeout:.0f} s per target"})
            replace(worker)
    for worker in list(workers):
        replace(worker)
    return results


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def report(cases: list[dict], seconds: float) -> None:
    """Per target, per family and per blocker."""
    print("\n## Per target (cases: reference expects pass / xfail+skip / leaves on CPU)\n")
    print("| target | cases | reference expects to pass | issue 10 | we pass | "
          + " | ".join(OUTCOMES[1:]) + " |")
    print("|---" * (5 + len(OUTCOMES) - 1) + "|")
    for kind in KINDS:
        mine = [c for c in cases if c["kind"] == kind]
        counts = collections.Counter(c["outcome"] for c in mine)
        expects = sum(c["expect"] == "pass" for c in mine)
        cells = [kind, str(len(mine)), f"{expects} ({_share(expects, len(mine))})",
                 f"{ISSUE_SHARES[kind]:.0%}", f"{counts['passed']} ({_share(counts['passed'], len(mine))})",
                 *[str(counts[o]) for o in OUTCOMES[1:]]]
        print("| " + " | ".join(cells) + " |")
    total = len(cases)
    passed = sum(c["outcome"] == "passed" for c in cases)
    print(f"\noverall: {passed} of {total} cases pass ({_share(passed, total)}); wall time "
          f"{seconds:.0f} s")
    expected = [c for c in cases if c["expect"] == "pass"]
    ours = sum(c["outcome"] == "passed" for c in expected)
    beyond = [c for c in cases if c["expect"] != "pass" and c["outcome"] == "passed"]
    print(f"of the {len(expected)} the reference expects to pass we pass {ours} "
          f"({_share(ours, len(expected))}); we also pass {len(beyond)} of the "
          f"{total - len(expected)} it marks xfail/skip or leaves on the CPU")
    print("\n## Per family (all targets)\n")
    print("| family | cases | passed | " + " | ".join(OUTCOMES[1:]) + " |")
    print("|---" * (3 + len(OUTCOMES) - 1) + "|")
    families = collections.defaultdict(list)
    for case in cases:
        families[family(case["file"])].append(case)
    for name in sorted(families, key=lambda n: -len(families[n])):
        counts = collections.Counter(c["outcome"] for c in families[name])
        cells = [name, str(len(families[name])),
                 f"{counts['passed']} ({_share(counts['passed'], len(families[name]))})",
                 *[str(counts[o]) for o in OUTCOMES[1:]]]
        print("| " + " | ".join(cells) + " |")
    _top("blocked: operators named", cases, "blocked", lambda c: c.get("ops", []))
    _top("npu rule: operator and rule", cases, "npu rule", lambda c: c.get("ops", []))
    _top("vela error", cases, "vela error", lambda c: [c.get("summary", "")])
    _top("traceback: innermost frame", cases, "traceback",
         lambda c: [f"{c.get('stage')}: {c.get('frame')} - {c.get('message', '')[:100]}"])
    _top("float program: test file", cases, "float program", lambda c: [c["file"]])
    _top("error", cases, "error", lambda c: [f"{c.get('stage')}: {c.get('summary', '')[:150]}"])
    _top("wrong result: test file", cases, "wrong result", lambda c: [c["file"]])
    _top("not exported", cases, "not exported", lambda c: [c.get("message", "")[:150]])


def _top(title: str, cases: list[dict], outcome: str, keys, limit: int = 25) -> None:
    counts = collections.Counter(k for c in cases if c["outcome"] == outcome for k in keys(c))
    if not counts:
        return
    print(f"\n### {title} (cases)\n")
    for key, count in counts.most_common(limit):
        print(f"{count:5d}  {key}")
    if len(counts) > limit:
        print(f"  ... and {len(counts) - limit} more")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=ROOT / "build" / "op_parity" / "cases",
                        help="collected cases (made on first use)")
    parser.add_argument("--recollect", action="store_true", help="collect again")
    parser.add_argument("--filter", help="regex on case ids, e.g. 'test_conv2d::.*u55'")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds per target of a group of cases (default 120)")
    parser.add_argument("--json", type=Path, help="write every case's record here")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker)
    started = time.perf_counter()
    args.cache.mkdir(parents=True, exist_ok=True)
    index = collect(args.cache, args.recollect, None)
    pattern = re.compile(args.filter) if args.filter else None
    cases = [c for c in index["cases"] if c.get("kind") in KINDS
             and (pattern is None or pattern.search(c["id"]))]
    runnable = [c for c in cases if c.get("program")]
    groups = make_groups(runnable)
    print(f"{len(cases)} INT cases ({len(runnable)} exported) in {len(groups)} groups "
          f"(program x scheme); {args.jobs} workers", flush=True)
    last = [time.perf_counter()]

    def progress(done: int) -> None:
        if time.perf_counter() - last[0] > 30 or done == len(runnable):
            last[0] = time.perf_counter()
            print(f"  {done}/{len(runnable)} cases, {last[0] - started:.0f} s", flush=True)

    with open(args.cache.parent / "workers.log", "w") as log:
        results = run_all(groups, args.cache / "programs", args.jobs, args.timeout, log, progress)
    for case in cases:
        if case.get("program"):
            case.update(results[case["id"]])
        else:
            case.update(outcome="not exported", stage="collect",
                        message=case.get("export_error", ""))
    report(cases, time.perf_counter() - started)
    if args.json:
        args.json.write_text(json.dumps({"cases": cases, "seconds": time.perf_counter() - started},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
