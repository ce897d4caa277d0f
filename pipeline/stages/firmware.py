"""Firmware stage: bare-metal firmware linked with one model artifact compiled in (the NPU
runner with an Ethos-U SDK, or the CPU runner with a CPU graph and its static arena)."""

from __future__ import annotations

from pathlib import Path

from pipeline.stages.declare import KEEP, File, Stage
from pipeline.stages.runtime import RUNTIME_SOURCES, build, tools


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    from pipeline.artifact import io_staging_bytes
    from pipeline.runtime.c_array import write_c_array

    model_c = Path(params["cmake_dir"]).parent / "model.c"
    write_c_array(i["artifact"], model_c, symbol="ethosu_model", where=where)
    arena = None
    if options.get("runner") == "cpu":  # the static arena is the one the plan asks for
        from pipeline.cpu.artifact import arena_bytes

        arena = arena_bytes(i["artifact"])
    # The IO staging buffer too: exactly what this model's inputs and outputs take.
    build(options, params, o, where, model_c=model_c, arena=arena,
          io_bytes=io_staging_bytes(Path(i["artifact"]).read_bytes(),
                                    options.get("runner", "npu")))


STAGE = Stage(
    name="firmware",
    doc="link bare-metal firmware with one model artifact compiled in",
    run=run,
    inputs={"artifact": File("artifact"), "sdk/*": File("source"), **RUNTIME_SOURCES},
    outputs={"elf": File("elf")},  # named by the plan: ethosu_runner.elf, tosa_cpu_runner.elf
    packages=(),
    tools=tools,
    views={"elf": KEEP},
)
