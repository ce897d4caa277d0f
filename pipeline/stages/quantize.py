"""Quantize stage: PT2E post-training quantization with the Ethos-U quantizer.

Imports torch/torchao inside the function so loading this module stays cheap.
"""

from __future__ import annotations

import json
from pathlib import Path


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

    from pipeline.quant.flow import quantize_program, quantize_with_record, sqnr_db
    from pipeline.programs import load_program, save_program
    from pipeline.quant.schemes import get_scheme
    from pipeline.ethosu.package import write_atomic

    get_scheme(scheme, where, observer, weights)  # reject a bad scheme before the slow part
    samples = torch.load(calibration, weights_only=True)
    program = load_program(exported)
    quantized, techniques = quantize_with_record(
        program, samples, scheme, where, observer, equalization, bias_correction, weights
    )
    save_program(quantized, out)
    if record is None:
        return
    summary = {"scheme": scheme, "observer": observer, "weights": weights, **techniques}
    if equalization or bias_correction is True:  # what they bought, on the calibration
        # samples (a second quantization; "auto" bias correction records its own comparison)
        plain = quantize_program(program, samples, scheme, where, observer, weights=weights)
        summary["calibration_sqnr_db"] = {
            "with": sqnr_db(program, quantized, samples),
            "without": sqnr_db(program, plain, samples),
        }
    write_atomic(record, json.dumps(summary, indent=2, sort_keys=True).encode())
