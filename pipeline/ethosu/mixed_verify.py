"""Mixed verify stage: each CPU segment of a sequence artifact under QEMU for the target's CPU,
bit-exact against the TOSA reference model, on the inputs the reference model computes for
that segment.

Every ``cpu_segment`` of the artifact is a CPU artifact of its own (``mixed.py``), so it runs
in the CPU runner as a CPU-only target's does (``cpu_verify.run_feeds``): bare metal as
firmware built with that segment compiled in, on the MPS2/MPS3 board of the target's CPU
(``config/boards.py``); Linux in ``tosa_cpu_runner`` under ``qemu-aarch64``. Its inputs, per
test sample, are the values the reference model computes for them in the whole graph; its
outputs are compared with the reference model's run of the segment's own TOSA sub-graph. NPU
segments are checked as without fallback (the verify stage, Vela's compile in ``mixed``):
without an Ethos-U or FVP here, they do not run.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parents[2]


def _values(tosa: Path, feeds: list[dict], names: list[str], where: str) -> list[dict]:
    """Per feed, the reference model's value of each tensor in ``names`` (graph inputs from
    the feed itself)."""
    from pipeline.tosa.flatbuffer import read_block, with_outputs
    from pipeline.verify.reference_model import run_reference_model

    # The reference model writes a graph's outputs only when every one of them is asked for.
    computed = list(dict.fromkeys([*read_block(tosa).outputs,
                                   *(n for n in names if not all(n in f for f in feeds))]))
    values = []
    with tempfile.TemporaryDirectory(prefix="mixed-verify-") as tmp:
        debug = Path(tmp) / "borders.tosa"
        debug.write_bytes(with_outputs(tosa, computed))
        for feed in feeds:
            found = run_reference_model(debug, feed, computed, where=where) if computed else {}
            values.append({**feed, **found})
    return values


def _program(k: int, artifact: Path, options: dict, cmake_dir: Path, where: str) -> dict:
    """The runner of CPU segment ``k``: firmware with it compiled in (bare metal), or the
    Linux CPU runner and the segment's artifact."""
    from pipeline.artifact import io_staging_bytes
    from pipeline.runtime.c_array import write_c_array
    from pipeline.cpu.artifact import arena_bytes
    from pipeline.runtime.cmake import build_runtime

    bare = options["platform"] == "cortex_m"
    build = cmake_dir / (f"segment{k}" if bare else "linux")
    model_c = None
    if bare:
        model_c = build.parent / f"segment{k}.c"
        model_c.parent.mkdir(parents=True, exist_ok=True)
        write_c_array(artifact, model_c, symbol="ethosu_model", where=where)
    products = build_runtime(
        REPO_DIR, build, toolchain=options["toolchain"], cpu=options["cpu"], isa=options["isa"],
        platform=options["platform"], build_type=options["build_type"], model_c=model_c,
        where=where, runner="cpu", board=options.get("board"),
        cpu_arena_bytes=arena_bytes(artifact) if bare else None,
        io_bytes=io_staging_bytes(Path(artifact).read_bytes(), "cpu") if bare else None)
    by_name = {p.name: p for p in products}
    if bare:
        return {"firmware": by_name["tosa_cpu_runner.elf"]}
    return {"runner": by_name["tosa_cpu_runner"], "artifact": artifact}


def _segment_blocks(data: bytes) -> list[bytes]:
    """The ``cpu_segment`` payloads of a sequence artifact, in order."""
    from pipeline.artifact import HEADER, pad16

    found, pos = [], 0
    while pos < len(data):
        name, size, _, _ = HEADER.unpack_from(data, pos)
        if name.rstrip(b"\0") == b"cpu_segment":
            found.append(data[pos + HEADER.size:pos + HEADER.size + size])
        pos += HEADER.size + pad16(size)
    return found


def mixed_verify(inputs: dict, report: Path, *, options: dict, cmake_dir: Path,
                 where: str = "") -> Path:
    """Run every CPU segment under QEMU on every test sample against the reference model.

    Args:
        inputs: ``artifact`` (the sequence artifact), ``record`` (mixed.json), ``tosa`` (the
            graph that was split), ``io`` and ``test_inputs``.
        report: where ``mixed_verify.json`` goes.
        options: the runtime's (toolchain, cpu, isa, platform, build_type), ``board`` (bare
            metal), ``qemu``, ``qemu_cpu``, ``substitute``.
        cmake_dir: the folder for the segments' CMake builds.
        where: ``target/stage`` for error messages.

    Returns:
        ``report``.

    Raises:
        CpuMismatch: a CPU segment's output differs; names the segment's first differing
            operator.
        StageError: a build, QEMU or the reference model failed.
    """
    import torch

    import pipeline.programs  # noqa: F401  (registers the q/dq ops _feeds quantizes with)
    from pipeline.cpu.tosa_read import read_graph
    from pipeline.cpu.verify import run_feeds
    from pipeline.ethosu.mixed import _segment_io
    from pipeline.files import write_atomic
    from pipeline.verify.check import _feeds
    from pipeline.ethosu.placement import family
    from pipeline.ethosu.split import place, segments, subgraph

    tosa, io = Path(inputs["tosa"]), json.loads(Path(inputs["io"]).read_text())
    record = json.loads(Path(inputs["record"]).read_text())
    known = json.loads(Path(inputs["placement"]).read_text())[family(record["accelerator"])]
    parts = segments(tosa, place(tosa, record["accelerator"], known))
    cpu_parts = [(k, p) for k, p in enumerate(parts) if p.runs_on == "cpu"]
    payloads = _segment_blocks(Path(inputs["artifact"]).read_bytes())
    feeds = _feeds(io, torch.load(inputs["test_inputs"], weights_only=True))
    names = list(dict.fromkeys(n for _, p in cpu_parts for n in p.inputs))
    values = _values(tosa, feeds, names, where)
    by_name = {t["tosa_name"]: t for t in record["tensors"]}
    checked = []
    with tempfile.TemporaryDirectory(prefix="mixed-verify-") as tmp:
        for (k, part), payload in zip(cpu_parts, payloads, strict=True):
            here = f"{where} segment {k} (CPU)"
            seg_tosa, artifact = Path(tmp) / f"segment{k}.tosa", Path(tmp) / f"segment{k}.bin"
            seg_tosa.write_bytes(subgraph(tosa, part))
            artifact.write_bytes(payload)
            plan = {"operators": [{"index": i, "op": op.op, "outputs": list(op.outputs)}
                                  for i, op in enumerate(read_graph(seg_tosa).ops)]}
            program = _program(k, artifact, options, Path(cmake_dir), here)
            seg_feeds = [{n: v[n] for n in part.inputs} for v in values]
            outputs, cost = run_feeds({**program, "tosa": seg_tosa},
                                      _segment_io(part, by_name, io), plan, seg_feeds,
                                      qemu=options["qemu"], qemu_cpu=options["qemu_cpu"],
                                      where=here)
            checked.append({"segment": k, "passed": True, "outputs": outputs,
                            "operators": [op["op"] for op in plan["operators"]],
                            "instructions": sum(cost) if cost else None,
                            "op_instructions": cost})
    result = {"passed": True, "check": "each CPU segment bit-exact against the TOSA reference "
              "model, on the inputs the reference model computes for it",
              "cpu": options["cpu"], "qemu": options["qemu"], "qemu_cpu": options["qemu_cpu"],
              "substitute": options["substitute"], "samples": len(feeds), "segments": checked}
    write_atomic(Path(report), json.dumps(result, indent=2).encode())
    return Path(report)
