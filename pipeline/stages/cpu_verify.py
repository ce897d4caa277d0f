"""CPU verify stage: a CPU-only target's artifact run under QEMU on the model's test inputs,
bit-exact against the TOSA reference model (``pipeline/cpu/verify.py``)."""

from __future__ import annotations

from pipeline.stages.declare import File, Stage


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    from pipeline.cpu.verify import cpu_verify

    cpu_verify(i, o["report"], qemu=options["qemu"], qemu_cpu=options["qemu_cpu"],
               cpu=options["cpu"], substitute=options["substitute"], where=where)


def tools(options: dict) -> dict[str, str]:
    """The QEMU that runs the artifact."""
    from pipeline.cpu.verify import qemu_fingerprint

    return {"qemu": qemu_fingerprint(options["qemu"])}


STAGE = Stage(
    name="cpu_verify",
    doc="run a CPU artifact under QEMU against the TOSA reference model, bit-exact",
    run=run,
    inputs={"firmware": File("elf"), "runner": File("binary"), "artifact": File("artifact"),
            "tosa": File("tosa"), "io": File("io"), "plan": File("record"),
            "test_inputs": File("samples")},
    outputs={"report": File("report", "cpu_verify.json")},
    tools=tools,
    views={"report": "cpu_verify.json"},
)
