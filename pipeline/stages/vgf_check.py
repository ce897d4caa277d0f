"""VGF run check: the ``.vgf`` executed on the model's test inputs (scenario runner, ML
emulation layer, Mesa's lavapipe) against the TOSA reference model (``pipeline/vgf/``)."""

from __future__ import annotations

from pipeline.cache.key import TOOL_PACKAGES
from pipeline.stages.declare import KEEP, File, Stage

RUNNER = ("ai-ml-sdk-scenario-runner", "ai-ml-emulation-layer-for-vulkan")


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    from pipeline.vgf.check import run_check

    run_check(i["vgf"], i["scenario"], i["vgf_io"], i["tosa"], i["test_inputs"], o["report"],
              where=where)


def tools(options: dict) -> dict[str, str]:
    """The Vulkan driver the check runs on."""
    from pipeline.vgf.vulkan import driver_fingerprint

    return {"lavapipe": driver_fingerprint()}


STAGE = Stage(
    name="vgf_check",
    doc="run the .vgf (scenario runner, emulation layer, lavapipe) against the TOSA reference "
        "model",
    run=run,
    inputs={"vgf": File("vgf"), "scenario": File("scenario"), "vgf_io": File("vgf_io"),
            "tosa": File("tosa"), "test_inputs": File("samples")},
    outputs={"report": File("report", "run_check.json")},
    packages=TOOL_PACKAGES + RUNNER,
    tools=tools,
    alongside=True,
    views={"report": KEEP},
)
