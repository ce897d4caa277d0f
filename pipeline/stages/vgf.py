"""VGF stage: a TOSA flatbuffer -> ``.vgf`` with the ML SDK model converter (``pipeline/vgf/``)."""

from __future__ import annotations

from pipeline.cache.key import TOOL_PACKAGES
from pipeline.stages.declare import KEEP, File, Stage

CONVERTER = ("ai-ml-sdk-model-converter", "ai-ml-sdk-vgf-library")


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    from pipeline.vgf.convert import convert

    convert(i["tosa"], i["io"], o["vgf"].parent, params["converter_args"], where=where)


STAGE = Stage(
    name="vgf",
    doc="convert a TOSA graph to a .vgf with the ML SDK model converter",
    run=run,
    inputs={"tosa": File("tosa"), "io": File("io")},
    outputs={"vgf": File("vgf", "model.vgf"), "scenario": File("scenario", "scenario.json"),
             "vgf_io": File("vgf_io", "vgf_io.json"),
             "figures": File("figures", "vgf_figures.json")},
    packages=TOOL_PACKAGES + CONVERTER,
    views={role: KEEP for role in ("vgf", "scenario", "vgf_io", "figures")},
)
