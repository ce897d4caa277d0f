"""Verify stage: the TOSA graph in the TOSA reference model against torch on the same inputs,
layer by layer and end to end (``pipeline/verify/``)."""

from __future__ import annotations

from pipeline.stages.declare import File, Stage


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    from pipeline.verify.check import verify

    variants = {k.removeprefix("tosa_"): p for k, p in i.items() if k.startswith("tosa_")}
    verify(i["float_model"], i["model"], i["tosa"], i["io"], i["test_inputs"], o["report"],
           variants=variants, where=where)


STAGE = Stage(
    name="verify",
    doc="run the TOSA reference model against torch on the same quantized graph",
    run=run,
    inputs={"float_model": File("program"), "model": File("program"), "tosa": File("tosa"),
            "io": File("io"), "test_inputs": File("samples"), "tosa_*": File("tosa")},
    outputs={"report": File("report", "verify.json")},
    views={"report": "verify.json"},
)
