"""Quantize stage: PT2E post-training quantization of an exported program (``pipeline/quant/``).

Imports torch/torchao inside the function so loading this module stays cheap.
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.stages.declare import File, Stage


def quantize(
    exported: Path,
    calibration: Path,
    out: Path,
    *,
    record: Path | None = None,
    scheme: str = "int8",
    observer: str = "mse",
    equalization: bool = False,
    bias_correction: bool | str = False,
    weights: str = "per_channel",
    where: str = "",
) -> None:
    """Quantize the float ExportedProgram ``exported`` and save the q/dq program to ``out``.

    Args:
        exported: ``model.pt2`` (torch.export.save of the float program).
        calibration: ``calibration.pt`` (torch.save of a list of input tuples).
        out: the quantized ExportedProgram (``.pt2``), written atomically.
        record: where to write ``quantize.json``: the options, what each post-training
            technique did, and (with a technique on) the SQNR over the calibration samples
            with and without the techniques; None: not written.
        scheme: ``int8`` (int8 activations, int8 per-channel weights, int32 bias) or
            ``a16w8`` (int16 symmetric activations, int8 weights).
        observer: how activation ranges are calibrated: ``mse`` (the range of least expected
            quantization error per tensor), ``minmax`` or ``histogram`` (int8).
        equalization: cross-layer equalisation of the float network first (quant/equalise.py).
        bias_correction: correct each conv/linear bias for its weights' quantization
            (quant/bias_correction.py); ``"auto"``: only where that raises the SQNR over the
            calibration samples (the config's default).
        weights: ``per_channel`` (default) or ``per_tensor`` weight scales.
        where: prefix of user errors, e.g. ``u85-linux/quantize``.

    Raises:
        UserError: unknown scheme or observer, or calibration samples that do not fit the model.
    """
    import torch

    from pipeline.chain.quantize import quantize as quantize_program
    from pipeline.files import write_atomic
    from pipeline.programs import load_program, save_program
    from pipeline.quant.flow import sqnr_db
    from pipeline.quant.schemes import get_scheme

    get_scheme(scheme, where, observer, weights)  # reject a bad scheme before the slow part
    samples = torch.load(calibration, weights_only=True)
    program = load_program(exported)
    quantized, techniques = quantize_program(
        program, samples, scheme, where=where, observer=observer, equalization=equalization,
        bias_correction=bias_correction, weights=weights)
    save_program(quantized, out)
    if record is None:
        return
    summary = {"scheme": scheme, "observer": observer, "weights": weights, **techniques}
    if equalization or bias_correction is True:  # what they bought, on the calibration
        # samples (a second quantization; "auto" bias correction records its own comparison)
        plain, _ = quantize_program(program, samples, scheme, where=where, observer=observer,
                                  weights=weights)
        summary["calibration_sqnr_db"] = {
            "with": sqnr_db(program, quantized, samples),
            "without": sqnr_db(program, plain, samples),
        }
    write_atomic(record, json.dumps(summary, indent=2, sort_keys=True).encode())


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    quantize(i["model"], i["calibration"], o["model"], record=o["record"],
             scheme=options["scheme"], observer=options["observer"],
             equalization=options.get("equalization", False),
             bias_correction=options.get("bias_correction", False),
             weights=options.get("weights", "per_channel"), where=where)


STAGE = Stage(
    name="quantize",
    doc="PT2E-quantize an exported model (torchao), calibrated",
    run=run,
    inputs={"model": File("program"), "calibration": File("samples")},
    outputs={"model": File("program", "model.pt2"), "record": File("record", "quantize.json")},
    views={"record": None},
)
