"""Quantization schemes Ethos-U runs: what each tensor role is quantized to.

``int8``:  int8 per-tensor affine activations, int8 per-channel symmetric weights in
           [-127, 127] (no -128, so weight sums stay symmetric; one scale per tensor with
           ``weights="per_tensor"``, as older toolchains and some deployments want), int32 bias.
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
from pipeline.quant.observers import MseObserver

SCHEMES = ("int8", "a16w8")
# How activation ranges are calibrated: ``mse`` (the default, observers.py) picks per tensor
# the range of least expected quantization error, rounding and clipping included; min/max of
# what the samples produce; torchao's histogram search (int8 only; an approximate error model
# and a greedy search that stops at the first rise).
OBSERVERS = {"minmax": MinMaxObserver, "histogram": HistogramObserver, "mse": MseObserver}
BIAS_RANGE = (-(2**31) + 1, 2**31 - 1)


@dataclass(frozen=True)
class QuantScheme:
    name: str
    activation: QuantizationSpec
    weight: QuantizationSpec


WEIGHTS = ("per_channel", "per_tensor")


def _weight(granularity: str = "per_channel") -> QuantizationSpec:
    if granularity == "per_tensor":
        return QuantizationSpec(torch.int8, MinMaxObserver, -127, 127, torch.per_tensor_symmetric)
    return QuantizationSpec(
        torch.int8, PerChannelMinMaxObserver, -127, 127, torch.per_channel_symmetric, ch_axis=0
    )


def get_scheme(
    name: str, where: str = "", observer: str = "mse", weights: str = "per_channel"
) -> QuantScheme:
    """The scheme called ``name``, its activations calibrated by ``observer``, its weights
    quantized ``per_channel`` or ``per_tensor``.

    Raises:
        UserError: ``name`` is not one of ``SCHEMES``, ``observer`` not one of ``OBSERVERS``,
            ``weights`` not one of ``WEIGHTS``, or a histogram asked for int16 activations.
    """
    prefix = f"{where}: " if where else ""
    if weights not in WEIGHTS:
        raise UserError(f"{prefix}weights must be one of {', '.join(WEIGHTS)}; got {weights!r}")
    if observer not in OBSERVERS or (observer == "histogram" and name == "a16w8"):
        allowed = ", ".join(OBSERVERS) if name != "a16w8" else "mse or minmax for a16w8"
        raise UserError(f"{prefix}calibration observer must be {allowed}; got {observer!r}")
    if name == "int8":
        activation = QuantizationSpec(
            torch.int8, OBSERVERS[observer], -128, 127, torch.per_tensor_affine
        )
    elif name == "a16w8":
        activation = QuantizationSpec(
            torch.int16, OBSERVERS[observer], -32767, 32767, torch.per_tensor_symmetric
        )
    else:
        raise UserError(
            f"{prefix}quantization scheme must be one of {', '.join(SCHEMES)}; got {name!r}"
        )
    return QuantScheme(name, activation, _weight(weights))
