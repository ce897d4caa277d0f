"""A lowered INT TOSA graph -> the CPU artifact a CPU-only target runs (the ``cpu_graph`` stage).

The artifact (docs/artifacts.md#cpu-artifact) uses the block framing of the model artifact
(``pipeline/artifact.py``): ``cpu_graph`` (the kernel library's graph with its static memory plan,
``pipeline/cpu/graph_format.py``), ``io_meta`` (the same records as the NPU artifact's: how
the application holds each input and output, its quantization) and ``cpu_end_stream``. The
stage also writes ``cpu_plan.json``: the arena the plan needs, the sum of all activation
sizes, and every operator in order with the TOSA tensors it writes (where it runs: the CPU),
which the QEMU check uses to name the first operator that differs.
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.artifact import block, io_meta
from pipeline.files import write_atomic

BLOCKS = ("cpu_graph", "io_meta", "cpu_end_stream")


def cpu_artifact(graph: bytes, io: dict) -> bytes:
    """The CPU artifact's bytes: the graph and the IO metadata in blocks (``BLOCKS``)."""
    return block("cpu_graph", graph) + block("io_meta", io_meta(io)) + block("cpu_end_stream", b"")


def arena_bytes(artifact: Path) -> int:
    """The arena a CPU artifact's memory plan needs (from its graph header): the firmware's
    static arena is exactly this big."""
    from pipeline.cpu.graph_format import HEADER as GRAPH_HEADER
    from pipeline.artifact import read_artifact

    graph = read_artifact(Path(artifact).read_bytes(), BLOCKS)["cpu_graph"]
    return GRAPH_HEADER.unpack_from(graph)[3]


def cpu_graph(tosa: Path, io_path: Path, artifact: Path, plan: Path, *, where: str = "") -> Path:
    """Write the CPU artifact of ``tosa`` and its plan.

    Args:
        tosa: the lowered INT graph (the common one, not an NPU variant).
        io_path: the lowering's io.json (names, dtypes, layouts, quantization of the IO).
        artifact: where the CPU artifact goes.
        plan: where ``cpu_plan.json`` goes.
        where: ``target/stage`` for error messages.
    Returns:
        ``artifact``.
    Raises:
        CpuGraphError: an operator, type or rank the kernel library does not run (named).
    """
    from pipeline.cpu.graph_format import encode
    from pipeline.cpu.tosa_read import read_graph

    blob, info = encode(Path(tosa), where)
    io = json.loads(Path(io_path).read_text())
    graph = read_graph(Path(tosa))
    operators = [{"index": i, "op": op.op, "outputs": list(op.outputs), "runs_on": "cpu"}
                 for i, op in enumerate(graph.ops)]
    record = {"format_version": info.version, "graph_bytes": info.file_bytes,
              "arena_bytes": info.arena_bytes, "tensor_bytes": info.tensor_bytes,
              "constant_bytes": info.constant_bytes, "op_counts": info.op_counts,
              "operators": operators}
    write_atomic(Path(artifact), cpu_artifact(blob, io))
    write_atomic(Path(plan), json.dumps(record, indent=2).encode())
    return Path(artifact)
