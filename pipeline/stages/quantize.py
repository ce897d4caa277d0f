"""Quantize stage: PT2E post-training quantization with the Ethos-U quantizer.

Imports torch/torchao inside the function so loading this module stays cheap.
"""

from __future__ import annotations

from pathlib import Path


def quantize(
    exported: Path,
    calibration: Path,
    out: Path,
    *,
    scheme: str = "int8",
    observer: str = "mse",
    where: str = "",
) -> None:
    """Quantize the float ExportedProgram ``exported`` and save the q/dq program to ``out``.

    Args:
        exported: ``model.pt2`` (torch.export.save of the float program).
        calibration: ``calibration.pt`` (torch.save of a list of input tuples).
        out: the quantized ExportedProgram (``.pt2``), written atomically.
        scheme: ``int8`` (int8 activations, int8 per-channel weights, int32 bias) or
            ``a16w8`` (int16 symmetric activations, int8 weights).
        observer: how activation ranges are calibrated: ``mse`` (the range of least expected
            quantization error per tensor), ``minmax`` or ``histogram`` (int8).
        where: prefix of user errors, e.g. ``u85-linux/quantize``.

    Raises:
        UserError: unknown scheme or observer, or calibration samples that do not fit the model.
    """
    import torch

    from pipeline.quant.flow import quantize_program
    from pipeline.quant.program import load_program, save_program
    from pipeline.quant.schemes import get_scheme

    get_scheme(scheme, where, observer)  # reject a bad scheme before the slow part
    samples = torch.load(calibration, weights_only=True)
    quantized = quantize_program(load_program(exported), samples, scheme, where, observer)
    save_program(quantized, out)
