"""The models of a targets file (by default the real model families of ``targets.yaml``
beside this file) built through the build's own stage invocations - export, quantize, lower,
verify, Vela, package - for every target, in plan order, without doit or the store: what
blocks a model, at which stage, and what each stage cost.

Shared by tests/models/test_real_models.py and benchmarks/bench_real_models.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

ZOO = Path(__file__).resolve().parent / "targets.yaml"
STAGES = ("export", "quantize", "lower", "verify", "vela", "package")


def load(targets: Path = ZOO):
    from pipeline.config.load import load_config

    return load_config(targets)


def model_names(targets: Path = ZOO) -> list[str]:
    """Every model the targets build, in the order they list them."""
    config = load(targets)
    return list(dict.fromkeys(m for t in config.targets.values() for m in t.models))


def build_model(name: str, build: Path, targets: Path = ZOO, samples: int | None = None) -> dict:
    """Run every stage invocation that builds ``name`` for the targets, in plan order
    (``samples``: that many calibration samples instead of the model's own).

    Returns ``{"blocker": message or None, "stage": failing stage, "seconds": {stage: s},
    "verify": verify.json, "vela": {npu config: figures.json}}``.
    """
    from pipeline.errors import UserError
    from pipeline.graph.actions import _call_stage
    from pipeline.graph.plan import make_plan

    config = load(targets)
    if samples is not None:
        model = config.models[name]
        calibration = model.calibration.model_copy(update={"samples": samples})
        config.models[name] = model.model_copy(update={"calibration": calibration})
    plan = make_plan(config, build)
    mine = [inv for inv in plan.invocations.values()
            if inv.stage in STAGES and (inv.name == name or inv.name.startswith(f"{name}/"))]
    result = {"blocker": None, "stage": None, "seconds": {}, "verify": None, "vela": {}}
    for inv in mine:
        for path in inv.outputs.values():
            path.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        try:
            _call_stage(inv, inv.outputs, plan.where(inv.task))
        except UserError as error:
            result.update(blocker=str(error), stage=inv.stage)
            return result
        finally:
            seconds = result["seconds"]
            seconds[inv.stage] = seconds.get(inv.stage, 0.0) + time.perf_counter() - started
        if inv.stage == "verify":
            result["verify"] = json.loads(inv.outputs["report"].read_text())
        elif inv.stage == "vela":
            result["vela"][inv.options["npu"]["config"]] = json.loads(
                inv.outputs["figures"].read_text())
    return result
