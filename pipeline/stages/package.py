"""Package stage: Vela's raw output and the IO description -> one model artifact (the Vela
bin-stream block format, ``pipeline/ethosu/package.py``)."""

from __future__ import annotations

from pipeline.stages.declare import File, Stage


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    from pipeline.ethosu.package import package

    package(i["npz"], i["io"], o["artifact"], where=where)


def check(i: dict, o: dict) -> str | None:
    """A restored ``model.bin`` parses block by block and agrees with io.json."""
    from pipeline.ethosu.package import artifact_problem

    return artifact_problem(o["artifact"], i["io"])


STAGE = Stage(
    name="package",
    doc="package Vela's output and the IO metadata into the model artifact",
    run=run,
    inputs={"npz": File("npz"), "io": File("io")},
    outputs={"artifact": File("artifact", "model.bin")},
    views={"artifact": "model.bin"},
    check=check,
)
