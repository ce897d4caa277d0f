"""CPU graph stage: a lowered INT TOSA graph -> the CPU artifact a CPU-only target runs, with
its static memory plan (``pipeline/cpu/``)."""

from __future__ import annotations

from pipeline.stages.declare import File, Stage


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    from pipeline.cpu.artifact import cpu_graph

    cpu_graph(i["tosa"], i["io"], o["artifact"], o["plan"], where=where)


def check(i: dict, o: dict) -> str | None:
    """A restored ``model.cpu.bin`` parses block by block and carries io.json's IO."""
    from pipeline.artifact import blocks_problem

    return blocks_problem(o["artifact"], "cpu_graph", "cpu_end_stream", i["io"])


STAGE = Stage(
    name="cpu_graph",
    doc="write the CPU kernel library's graph and memory plan of a TOSA INT graph",
    run=run,
    inputs={"tosa": File("tosa"), "io": File("io")},
    outputs={"artifact": File("artifact", "model.cpu.bin"), "plan": File("record", "cpu_plan.json")},
    views={"artifact": "model.cpu.bin", "plan": "cpu_plan.json"},
    check=check,
)
