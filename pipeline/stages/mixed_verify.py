"""Mixed verify stage: each CPU segment of a sequence artifact under QEMU for the target's CPU,
bit-exact against the TOSA reference model (``pipeline/ethosu/mixed_verify.py``)."""

from __future__ import annotations

from pathlib import Path

from pipeline.stages.declare import File, Stage
from pipeline.stages.runtime import RUNTIME_SOURCES


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    from pipeline.ethosu.mixed_verify import mixed_verify

    mixed_verify(i, o["report"], options=options, cmake_dir=Path(params["cmake_dir"]),
                 where=where)


def tools(options: dict) -> dict[str, str]:
    """QEMU, and the compiler of the CPU runner it builds for each segment."""
    from pipeline.cpu.verify import qemu_fingerprint
    from pipeline.runtime.cmake import toolchain_fingerprint

    return {"qemu": qemu_fingerprint(options["qemu"]),
            "toolchain": toolchain_fingerprint(options["toolchain"])}


STAGE = Stage(
    name="mixed_verify",
    doc="run each CPU segment of a mixed graph under QEMU against the TOSA reference model, "
        "bit-exact",
    run=run,
    inputs={"artifact": File("artifact"), "record": File("record"), "tosa": File("tosa"),
            "placement": File("placement"),
            "io": File("io"), "test_inputs": File("samples"), **RUNTIME_SOURCES},
    outputs={"report": File("report", "mixed_verify.json")},
    tools=tools,
    views={"report": "mixed_verify.json"},
)
