"""Vela stage: a TOSA flatbuffer compiled for one Ethos-U configuration, after the NPU's
placement rules are checked (``pipeline/ethosu/``); with ``npu.search`` on, compiled with
each candidate set of Vela options and the fastest kept (``pipeline/ethosu/search.py``)."""

from __future__ import annotations

from pipeline.stages.declare import File, Stage


def known(placement, accelerator: str) -> list:
    """The placement verdicts the lower stage wrote for ``accelerator``'s family."""
    import json

    from pipeline.ethosu.placement import family

    return json.loads(placement.read_text())[family(accelerator)]


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    import json

    from pipeline.config.vela_ini import read_vela_ini
    from pipeline.ethosu.search import search_vela
    from pipeline.ethosu.vela import run_vela

    memory_mode = read_vela_ini(i["vela_ini"]).memory_modes[options["npu"]["memory_mode"]]
    verdicts = known(i["placement"], options["npu"]["config"])
    candidates = params.get("vela_candidates") or [params["vela_args"]]
    if len(candidates) == 1:
        run_vela(i["tosa"], o["npz"].parent, candidates[0], where=where, known=verdicts,
                 memory_mode=memory_mode)
        return
    effort = options["npu"]["search"]
    record = search_vela(i["tosa"], o["npz"].parent, candidates, effort=effort, where=where,
                         known=verdicts, memory_mode=memory_mode, progress=effort == "full")
    figures = json.loads(o["figures"].read_text())
    figures["search"] = record
    o["figures"].write_text(json.dumps(figures, indent=2, sort_keys=True))


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
