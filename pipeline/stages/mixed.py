"""Mixed stage (``npu: {fallback: cpu}``): a TOSA graph split into NPU segments (Vela) and CPU
segments (the kernel library), packaged as one sequence artifact (``pipeline/ethosu/mixed.py``)."""

from __future__ import annotations

from pipeline.stages.declare import File, Stage


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    from pipeline.ethosu.mixed import mixed
    from pipeline.stages.vela import known

    mixed(i["tosa"], i["io"], o["artifact"], o["record"], vela_args=params["vela_args"],
          accelerator=params["accelerator"], where=where,
          known=known(i["placement"], params["accelerator"]))


def check(i: dict, o: dict) -> str | None:
    """A restored sequence ``model.bin`` parses block by block and carries io.json's IO."""
    from pipeline.artifact import blocks_problem

    return blocks_problem(o["artifact"], "sequence", "sequence_end", i["io"])


STAGE = Stage(
    name="mixed",
    doc="split a TOSA graph into NPU (Vela) and CPU segments, one sequence artifact "
        "(npu: {fallback: cpu})",
    run=run,
    inputs={"tosa": File("tosa"), "io": File("io"), "placement": File("placement"),
            "vela_ini": File("ini")},
    outputs={"artifact": File("artifact", "model.bin"), "record": File("record", "mixed.json")},
    views={"artifact": "model.bin", "record": "mixed.json"},
    check=check,
)
