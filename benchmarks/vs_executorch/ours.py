"""Our flow: the stage functions the build runs, cold (no store), each timed.

It runs the stages over files, as ``doit build`` does (saving and loading the programs
between stages is part of what a build costs), not the in-memory chain of
``pipeline.chain.run``: the time compared is the time a user's cold build takes.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from .env import quiet
from .figures import sum_figures
from .models import SQNR_INPUTS, ModelEntry, sqnr_inputs
from .sqnr import torch_sqnr, varying_share


@dataclass
class OursResult:
    shared_s: dict = field(default_factory=dict)  # stage -> seconds (export..verify)
    per_npu_s: dict = field(default_factory=dict)  # npu -> seconds (vela + package)
    figures: dict = field(default_factory=dict)  # npu -> summed figures
    errors: dict = field(default_factory=dict)  # npu or "shared" -> message
    sqnr_tosa: float | None = None
    sqnr_torch: float | None = None
    verified: bool | None = None
    test_inputs: list = field(default_factory=list)
    calibration: list = field(default_factory=list)
    sqnr_inputs: list = field(default_factory=list)
    sqnr_many: dict = field(default_factory=dict)  # observer -> torch SQNR over sqnr_inputs
    varying: float | None = None  # share of the float output's power that varies by input


# Post-training techniques --observers may also name (calibration: settings of targets.yaml).
TECHNIQUES = {
    "+cle": {"equalization": True},
    "+bc": {"bias_correction": True},
    "+both": {"equalization": True, "bias_correction": True},
}


def _observer_sqnr(res: OursResult, entry: ModelEntry, out: dict, qdir: Path, observers,
                   where: str) -> None:
    """Torch SQNR over the SQNR inputs of the program quantized with the model's observer
    (already in ``qdir``) and with each of ``observers`` (quantized here, untimed)."""
    from pipeline.programs import load_program
    from pipeline.stages.quantize import quantize

    float_fn = load_program(out["model"]).module()
    res.varying = varying_share(float_fn, res.sqnr_inputs)
    for observer in dict.fromkeys([entry.observer, *observers]):
        path = qdir / "model.pt2" if observer == entry.observer else qdir / observer / "model.pt2"
        # A technique ("+cle", "+bc", "+both") runs on top of the model's observer.
        options = TECHNIQUES.get(observer, {"observer": observer})
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            quantize(out["model"], out["calibration"], path, scheme="int8",
                     **{"observer": entry.observer, **entry.techniques, **options}, where=where)
        res.sqnr_many[observer] = torch_sqnr(float_fn, load_program(path).module(),
                                             res.sqnr_inputs)


def run_ours(entry: ModelEntry, npus, work: Path, observers=(), sqnr_count: int = SQNR_INPUTS,
             sqnr_only: bool = False) -> OursResult:
    """Our stages, cold: export, quantize, lower, verify once; vela + package per NPU (with
    ``sqnr_only``: export and quantize). Then the torch SQNR of the model's observer and of
    each of ``observers``."""
    import torch

    from pipeline.chain.vela import npu_config, vela_args
    from pipeline.errors import UserError
    from pipeline.ethosu.package import package
    from pipeline.ethosu.vela import run_vela
    from pipeline.stages.export import export
    from pipeline.stages.quantize import quantize

    res = OursResult()
    where = f"bench/{entry.name}"
    exp, qdir, ldir = work / "export", work / "quantize", work / "lower"
    for folder in (qdir, ldir):
        folder.mkdir(parents=True, exist_ok=True)

    def timed(name, fn, *args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            res.shared_s[name] = time.perf_counter() - start

    try:
        with quiet():
            out = timed("export", export, entry.path, entry.attr, exp,
                        **entry.export_options(), where=where)
            timed("quantize", quantize, out["model"], out["calibration"], qdir / "model.pt2",
                  scheme="int8", observer=entry.observer, **entry.techniques, where=where)
            res.test_inputs = torch.load(out["test_inputs"], weights_only=True)
            res.calibration = torch.load(out["calibration"], weights_only=True)
            res.sqnr_inputs = sqnr_inputs(entry, res.test_inputs, sqnr_count)
            if not sqnr_only:
                variants = _lower_and_verify(res, out, qdir, ldir, work, timed, where)
            _observer_sqnr(res, entry, out, qdir, observers, where)
    except UserError as exc:
        res.errors["shared"] = str(exc)
        return res
    for npu in [] if sqnr_only else npus:
        vdir = work / "vela" / npu
        start = time.perf_counter()
        try:
            tosa = variants[npu_config(npu).variant]
            paths = run_vela(tosa, vdir, vela_args(npu), where=f"{where}/{npu}")
            package(paths["npz"], ldir / "io.json", vdir / "model.bin", where=f"{where}/{npu}")
            figures = json.loads(paths["figures"].read_text())
            res.figures[npu] = sum_figures([figures])
        except UserError as exc:
            res.errors[npu] = str(exc).strip().splitlines()[0]
        res.per_npu_s[npu] = time.perf_counter() - start
    return res


def _lower_and_verify(res: OursResult, out: dict, qdir: Path, ldir: Path, work: Path, timed,
                      where: str) -> dict:
    """Lower (the shipped default spec, and one graph per NPU family, as `doit build` does)
    and verify; the verify report's SQNR into ``res``. Returns the NPU variants' TOSA paths."""
    from pipeline.config.npu import NPU_VARIANTS
    from pipeline.config.tosa_spec import DEFAULT_TOSA
    from pipeline.errors import VerificationError
    from pipeline.stages.lower import lower
    from pipeline.verify.check import verify

    variants = {v: ldir / f"model.{v}.tosa" for v in NPU_VARIANTS}
    timed("lower", lower, qdir / "model.pt2", ldir / "model.tosa", ldir / "io.json",
          spec=str(DEFAULT_TOSA), variants=variants, where=where)
    report_path = work / "verify.json"
    try:
        timed("verify", verify, out["model"], qdir / "model.pt2", ldir / "model.tosa",
              ldir / "io.json", out["test_inputs"], report_path, variants=variants, where=where)
        res.verified = True
    except VerificationError as exc:  # the report is written before the raise
        res.verified, res.errors["verify"] = False, str(exc)
    report = json.loads(report_path.read_text())
    tosa = [o.get("sqnr_db_vs_float") for o in report["outputs"]]
    torch_q = [o.get("sqnr_db_torch_quantized_vs_float") for o in report["outputs"]]
    res.sqnr_tosa = min(math.inf if v is None else v for v in tosa)
    res.sqnr_torch = min(math.inf if v is None else v for v in torch_q)
    return variants
