"""Quantization schemes Ethos-U runs: what each tensor role is quantized to.

``int8``:  int8 per-tensor affine activations, int8 per-channel symmetric weights in
           [-127, 127] (no -128, so weight sums stay symmetric), int32 bias.
``a16w8``: int16 per-tensor symmetric activations (zero point 0, [-32767, 32767]), the same
           int8 weights, int32 bias (widened to int48 accumulators by the lowering).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torchao.quantization.pt2e.observer import (
    HistogramObserver,
    MinMaxObserver,
    PerChannelMinMaxObserver,
)
from torchao.quantization.pt2e.quantizer import QuantizationSpec

from pipeline.errors import UserError

SCHEMES = ("int8", "a16w8")
# How activation ranges are calibrated: min/max of what the samples produce, or a histogram
# that trims outliers to minimise the quantization error (int8 only; +1.6 to +3.7 dB SQNR on
# the example CNNs, but worse on attention blocks whose softmax inputs it clips).
OBSERVERS = {"minmax": MinMaxObserver, "histogram": HistogramObserver}
BIAS_RANGE = (-(2**31) + 1, 2**31 - 1)


@dataclass(frozen=True)
class QuantScheme:
    name: str
    activation: QuantizationSpec
    weight: QuantizationSpec


def _weight() -> QuantizationSpec:
    return QuantizationSpec(
        torch.int8, PerChannelMinMaxObserver, -127, 127, torch.per_channel_symmetric, ch_axis=0
    )


def get_scheme(name: str, where: str = "", observer: str = "minmax") -> QuantScheme:
    """The scheme called ``name``, its activations calibrated by ``observer``.

    Raises:
        UserError: ``name`` is not one of ``SCHEMES``, ``observer`` not one of ``OBSERVERS``,
            or a histogram asked for int16 activations.
    """
    prefix = f"{where}: " if where else ""
    if observer not in OBSERVERS or (observer == "histogram" and name == "a16w8"):
        allowed = ", ".join(OBSERVERS) if name != "a16w8" else "minmax for a16w8"
        raise UserError(f"{prefix}calibration observer must be {allowed}; got {observer!r}")
    if name == "int8":
        activation = QuantizationSpec(
            torch.int8, OBSERVERS[observer], -128, 127, torch.per_tensor_affine
        )
    elif name == "a16w8":
        activation = QuantizationSpec(
            torch.int16, MinMaxObserver, -32767, 32767, torch.per_tensor_symmetric
        )
    else:
        raise UserError(
            f"{prefix}quantization scheme must be one of {', '.join(SCHEMES)}; got {name!r}"
        )
    return QuantScheme(name, activation, _weight())
