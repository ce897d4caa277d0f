"""Quantize: PT2E post-training quantization of a normalised program."""

from __future__ import annotations

from pipeline.tosa.registry import lowered_targets, quant_rules


def quantize(program, samples, scheme: str = "int8", *, where: str = "", observer: str = "mse",
             equalization: bool = False, bias_correction: bool | str = False,
             weights: str = "per_channel"):
    """``(q/dq program, record)``: ``program`` normalised, then PT2E-quantized and calibrated on
    every sample (``pipeline.quant.flow.quantize_with_record`` says what each option does),
    with the quantization rules the operator files declare.

    Raises:
        UserError: a bad scheme or observer, or samples that do not fit the program.
    """
    from pipeline.normalise import normalise
    from pipeline.quant.flow import quantize_with_record

    return quantize_with_record(normalise(program, lowered_targets()), samples, scheme, where,
                                observer, equalization, bias_correction, weights,
                                rules=quant_rules())


def quantize_program(program, samples, scheme: str = "int8", where: str = "", **options):
    """``quantize`` without its record: the q/dq program alone."""
    return quantize(program, samples, scheme, where=where, **options)[0]
