"""Mixed stage (``npu: {fallback: cpu}``): a lowered graph -> NPU and CPU segments -> one
sequence artifact.

The NPU family's variant of the graph is split (``pipeline/ethosu/split.py``): each NPU segment
is compiled by Vela (which must place every one of its operators on the NPU), each CPU segment
encoded as a CPU graph (``.tcg``, ``pipeline/cpu/graph_format.py``). The artifact
(docs/artifacts.md#sequence-artifact) uses the block framing of the model artifact: a
``sequence`` block (versioned: the tensors crossing segment borders and the segments in order),
then one block per segment whose payload is a whole artifact of its own (``npu_segment``: a
model artifact, ``package.model_artifact``; ``cpu_segment``: a CPU artifact,
``pipeline/cpu/artifact.py``), so the runtime checks each with the parser it already has; then
``io_meta`` and ``sequence_end``. A target without fallback never comes here: its artifact is
unchanged.

The stage also writes ``mixed.json``: every operator with where it runs and why, each
segment's border tensors and estimated cost (Vela's figures for NPU segments; for CPU segments
none yet, with the reason).
"""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

from pipeline.cpu.artifact import cpu_artifact
from pipeline.artifact import DTYPES, ELEM_SIZE, block, io_meta
from pipeline.ethosu.package import model_artifact
from pipeline.files import write_atomic

SEQUENCE_MAGIC = 0x5145534D  # b"MSEQ"
SEQUENCE_VERSION = 1
SEQUENCE_HEADER = struct.Struct("<IHHHH")  # magic, version, segments, tensors, reserved
SEQUENCE_TENSOR = struct.Struct("<32sII6iI")  # name, dtype, rank, shape, bytes
SEQUENCE_SEGMENT = struct.Struct("<III")  # kind, inputs, outputs; then u32 tensor ids
KINDS = {"npu": 0, "cpu": 1}
SEGMENT_BLOCKS = {"npu": "npu_segment", "cpu": "cpu_segment"}
# What the runtime holds (runtime/include/ethosu_rt/sequence.h: kMaxSegments,
# kMaxSequenceTensors, kMaxSegmentIo).
MAX_SEGMENTS, MAX_TENSORS, MAX_SEGMENT_IO = 16, 64, 16
CPU_COST_REASON = ("not measured: the mixed_verify stage measures it under QEMU where it runs "
                   "for the target's CPU")


def _quantization(entry: dict | None) -> dict | str:
    """A graph input's or output's scale and zero point; an intermediate's integers cross the
    border as they are."""
    if entry is not None and "scale" in entry:
        return {"scale": entry["scale"], "zero_point": entry.get("zero_point", 0)}
    return ("the TOSA graph's integers as they are (no rescale at the border: both sides run "
            "the same integer graph)")


def _border(segments: list, block, io: dict, where: str) -> list[dict]:
    """The tensors crossing segment borders: graph inputs, graph outputs, then intermediates
    in the order they are written (their index is their id in the artifact)."""
    from pipeline.errors import StageError

    # (TOSA name, name in the artifact): an input renamed in targets.yaml keeps its graph
    # tensor name in io.json's "tosa_name".
    names = [(e.get("tosa_name", e["name"]), e["name"]) for e in io["inputs"] + io["outputs"]]
    names += [(n, n) for s in segments for n in s.outputs if n not in dict(names)]
    graph = {e["name"]: e for e in io["inputs"] + io["outputs"]}
    tensors = []
    for tosa_name, name in names:
        t = block.tensors.get(tosa_name)
        if t is None or t.dtype not in DTYPES:
            raise StageError(where, f"border tensor {name} must be a tensor of the graph of "
                             f"type {', '.join(DTYPES)}; got {t.dtype if t else 'no such tensor'}")
        count = 1
        for d in t.shape:
            count *= int(d)
        tensors.append({"name": name, "tosa_name": tosa_name, "dtype": t.dtype,
                        "shape": list(t.shape),
                        "bytes": count * ELEM_SIZE[t.dtype],
                        "quantization": _quantization(graph.get(name))})
    return tensors


def sequence_block(tensors: list[dict], segments: list) -> bytes:
    """The ``sequence`` block's payload (docs/artifacts.md#the-sequence-block)."""
    ids = {t["tosa_name"]: i for i, t in enumerate(tensors)}
    body = SEQUENCE_HEADER.pack(SEQUENCE_MAGIC, SEQUENCE_VERSION, len(segments), len(tensors), 0)
    for t in tensors:
        shape = t["shape"] + [0] * (6 - len(t["shape"]))
        body += SEQUENCE_TENSOR.pack(t["name"].encode()[:31], DTYPES[t["dtype"]],
                                     len(t["shape"]), *shape, t["bytes"])
    for s in segments:
        body += SEQUENCE_SEGMENT.pack(KINDS[s.runs_on], len(s.inputs), len(s.outputs))
        body += struct.pack(f"<{len(s.inputs) + len(s.outputs)}I",
                            *[ids[n] for n in (*s.inputs, *s.outputs)])
    return body


def _check_limits(parts: list, tensors: list[dict], where: str) -> None:
    """The runtime's fixed tables must hold the sequence (no heap there)."""
    from pipeline.errors import UserError

    counts = [("segments", len(parts), MAX_SEGMENTS), ("border tensors", len(tensors),
              MAX_TENSORS)]
    counts += [(f"inputs of segment {k}", len(p.inputs), MAX_SEGMENT_IO) for k, p in
               enumerate(parts)] + [(f"outputs of segment {k}", len(p.outputs), MAX_SEGMENT_IO)
                                    for k, p in enumerate(parts)]
    for what, got, most in counts:
        if got > most:
            raise UserError(f"{where}: a sequence artifact's {what} must be at most {most} (the "
                            f"runtime's fixed tables); got {got}. Fewer operators the NPU cannot "
                            "take, or none interleaved, make fewer segments")


def _segment_io(segment, tensors: dict, io: dict) -> dict:
    """A segment's IO in io.json's form: a graph input or output as the lowering described
    it (layout, quantization), an intermediate as the TOSA integers (scale 1, zero point 0).
    ``tensors``: the border tensors by TOSA name."""
    graph = {e.get("tosa_name", e["name"]): e for e in io["inputs"] + io["outputs"]}

    def entry(name: str) -> dict:
        t = tensors[name]
        return graph.get(name) or {"name": name, "dtype": t["dtype"], "shape": t["shape"],
                                   "scale": 1.0, "zero_point": 0, "layout": "torch"}

    return {"inputs": [entry(n) for n in segment.inputs],
            "outputs": [entry(n) for n in segment.outputs]}


def _segment(k: int, part, path: Path, part_io: dict, vela_args: list[str],
             where: str) -> tuple[bytes, dict]:
    """One segment's block (its artifact) and its entry in mixed.json: an NPU segment
    compiled by Vela (with its figures), a CPU segment encoded as a .tcg."""
    from pipeline.cpu.graph_format import encode
    from pipeline.ethosu.vela import run_vela

    entry = {"index": k, "runs_on": part.runs_on, "inputs": list(part.inputs),
             "outputs": list(part.outputs), "operators": [p.index for p in part.ops]}
    if part.runs_on == "npu":
        out = run_vela(path, path.with_name(f"vela{k}"), vela_args, where=where, checked=True)
        entry["vela"] = json.loads(out["figures"].read_text())
        entry["cycles"] = entry["vela"]["cycles_total"]
        return block("npu_segment", model_artifact(out["npz"], part_io, where)), entry
    graph, info = encode(path, where)
    entry.update(arena_bytes=info.arena_bytes, graph_bytes=info.file_bytes, instructions=None,
                 cost_reason=CPU_COST_REASON)
    return block("cpu_segment", cpu_artifact(graph, part_io)), entry


def mixed(tosa: Path, io_path: Path, artifact: Path, record: Path, *, vela_args: list[str],
          accelerator: str, where: str = "", known: list | None = None) -> Path:
    """Split ``tosa`` for ``accelerator``, compile and encode its segments, write the artifact.

    Args:
        tosa: the NPU family's variant of the lowered INT graph.
        io_path: the lowering's io.json.
        artifact: where the sequence artifact goes.
        record: where ``mixed.json`` goes.
        vela_args: the target's Vela options.
        accelerator: e.g. ``ethos-u55-128``.
        where: ``target/stage`` for error messages.
        known: ``tosa``'s placement verdicts for the accelerator's family, when computed.

    Returns:
        ``artifact``.

    Raises:
        StageError: Vela left an operator of an NPU segment on the CPU, or failed.
        CpuGraphError: the kernel library does not run an operator of a CPU segment.
    """
    from pipeline.tosa import flatbuffer
    from pipeline.ethosu.split import place, segments, subgraph

    io = json.loads(Path(io_path).read_text())
    placed = place(Path(tosa), accelerator, known)
    parts = segments(Path(tosa), placed)
    tensors = _border(parts, flatbuffer.read_block(Path(tosa)), io, where)
    _check_limits(parts, tensors, where)
    by_name = {t["tosa_name"]: t for t in tensors}
    blobs, entries = [], []
    with tempfile.TemporaryDirectory(prefix="mixed-") as tmp:
        for k, part in enumerate(parts):
            path = Path(tmp) / f"segment{k}.tosa"
            path.write_bytes(subgraph(Path(tosa), part))
            blob, entry = _segment(k, part, path, _segment_io(part, by_name, io), vela_args,
                                   f"{where} segment {k} ({part.runs_on.upper()})")
            blobs.append(blob)
            entries.append(entry)
    data = b"".join([block("sequence", sequence_block(tensors, parts)), *blobs,
                     block("io_meta", io_meta(io)), block("sequence_end", b"")])
    operators = [{"index": p.index, "op": p.op, "location": p.location, "outputs": list(p.outputs),
                  "runs_on": p.runs_on, "segment": k, **({"reason": p.reason} if p.reason else {})}
                 for k, part in enumerate(parts) for p in part.ops]
    summary = {"format_version": SEQUENCE_VERSION, "accelerator": accelerator,
               "segments": entries, "tensors": tensors, "operators": operators}
    write_atomic(Path(artifact), data)
    write_atomic(Path(record), json.dumps(summary, indent=2).encode())
    return Path(artifact)
