"""Vela stage: a TOSA flatbuffer compiled for one Ethos-U configuration, after the NPU's
placement rules are checked (``pipeline/ethosu/``)."""

from __future__ import annotations

from pipeline.stages.declare import File, Stage


def known(placement, accelerator: str) -> list:
    """The placement verdicts the lower stage wrote for ``accelerator``'s family."""
    import json

    from pipeline.ethosu.placement import family

    return json.loads(placement.read_text())[family(accelerator)]


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    from pipeline.config.vela_ini import read_vela_ini
    from pipeline.ethosu.vela import run_vela

    memory_mode = read_vela_ini(i["vela_ini"]).memory_modes[options["npu"]["memory_mode"]]
    run_vela(i["tosa"], o["npz"].parent, params["vela_args"], where=where,
             known=known(i["placement"], options["npu"]["config"]), memory_mode=memory_mode)


def check(i: dict, o: dict) -> str | None:
    """A restored ``model_vela.npz`` holds every array the package stage reads."""
    from pipeline.ethosu.vela_npz import npz_problem

    return npz_problem(o["npz"])


STAGE = Stage(
    name="vela",
    doc="compile a TOSA graph for one Ethos-U configuration with Vela",
    run=run,
    inputs={"tosa": File("tosa"), "placement": File("placement"), "vela_ini": File("ini")},
    outputs={"npz": File("npz", "model_vela.npz"), "summary": File("csv", "summary.csv"),
             "layers": File("csv", "per_layer.csv"), "figures": File("figures", "figures.json"),
             "roofline": File("roofline", "roofline.json")},
    views={"summary": "vela_summary.csv", "layers": "vela_per_layer.csv", "figures": None,
           "roofline": "roofline.json"},
    check=check,
)
