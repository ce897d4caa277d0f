"""The ``models:`` block: where a PyTorch model lives, its example inputs and calibration."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Discriminator, Field, Tag

from pipeline.config.base import Broken, RuledModel, broken, problem, show
from pipeline.config.paths import ExistingDir, SourceField, SourceRef

Dtype = Literal["float32", "int8", "int16", "int32", "int64", "bool"]
_INT_LIMITS = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1), "bool": (0, 1),
}
Seed = Annotated[int, Field(ge=0, lt=2**32)]  # any RNG (torch, numpy) accepts this range
# Elements per input: 2**28 is 1 GiB of float32 per drawn sample (the export holds the
# calibration and test samples at once) and ten times a 4K RGB frame (3x2160x3840); an
# Ethos-U system's SRAM is a few MiB and its NPU addresses 4 GiB (U55/U65), so no input of
# a model it runs comes near. Beyond it a shape is a typo, and drawing it would exhaust memory.
MAX_INPUT_ELEMENTS = 2**28
# Calibration samples: PTQ recipes use hundreds (a few thousand at most); 100,000 is far past
# any of them and still ends, where samples: 10**18 would draw for ever.
MAX_CALIBRATION_SAMPLES = 100_000


def as_tuple(value: Any) -> Any:
    """YAML gives lists; the models hold tuples so they stay immutable."""
    return tuple(value) if isinstance(value, list) else value


def _pair(value: Any) -> Any:
    if isinstance(value, list | tuple) and len(value) != 2:
        raise problem(f"must be [lo, hi]; got {show(list(value))}")
    return as_tuple(value)


class InputSpec(RuledModel):
    """One example input, generated at random from ``seed``.

    Attributes:
        name: optional name (unique within the model).
        shape: 1 to 6 positive dimensions, at most 2**28 elements in all.
        dtype: element type.
        range: ``[lo, hi]`` of the uniform values (lo < hi; within the dtype for integers).
    """

    name: str | None = None
    shape: Annotated[tuple[Annotated[int, Field(gt=0)], ...], BeforeValidator(as_tuple),
                     Field(min_length=1, max_length=6)]
    dtype: Dtype = "float32"
    range: Annotated[tuple[float, float], BeforeValidator(_pair)] = (-1.0, 1.0)

    @classmethod
    def _rules(cls, v: Mapping[str, Any], context) -> Iterator[Broken]:
        if "shape" in v and math.prod(v["shape"]) > MAX_INPUT_ELEMENTS:
            yield broken(f"must have at most 2**28 ({MAX_INPUT_ELEMENTS}) elements; got "
                         f"{show(list(v['shape']))} ({math.prod(v['shape'])} elements)", "shape")
        if "range" not in v:
            return
        lo, hi = v["range"]
        if lo >= hi:
            yield broken(f"must be [lo, hi] with lo < hi; got {show(list(v['range']))}", "range")
        limits = _INT_LIMITS.get(v.get("dtype", ""))
        if limits and not (limits[0] <= lo and hi <= limits[1]):
            yield broken(f"must lie within {limits[0]}..{limits[1]} for {v['dtype']}; "
                         f"got {show(list(v['range']))}", "range", "dtype")


class Calibration(RuledModel):
    """Calibration data for quantization: random ``samples`` from ``seed``, or a ``folder``.

    Attributes:
        samples: number of random samples, 1 to 100000 (16 unless
            ``folder`` is set; then None).
        seed: seed of the random samples (1 unless ``folder`` is set; then None).
        folder: absolute path of a folder of saved input tensors, or None.
        observer: how activation ranges are taken from the samples: ``mse`` (default: per
            tensor, the range of least expected quantization error, rounding and clipping
            included), ``minmax``, or ``histogram`` (torchao's, int8 only).
        equalization: cross-layer equalisation before calibration: the channels between
            consecutive conv/depthwise/linear layers (through relu or pooling) rescaled so
            each channel's weight range is shared evenly between the two layers.
        bias_correction: each conv/linear's bias loses the mean shift of its outputs that
            quantizing its weights causes, measured on the calibration samples; ``auto``
            (default): kept only where it raises the SQNR over those samples.
        weights: ``per_channel`` (default: one scale per output channel) or ``per_tensor``
            (one scale per weight tensor).
    """

    samples: Annotated[int, Field(ge=1, le=MAX_CALIBRATION_SAMPLES)] | None = None
    seed: Seed | None = None
    folder: ExistingDir | None = None
    observer: Literal["mse", "minmax", "histogram"] = "mse"
    equalization: bool = False
    bias_correction: bool | Literal["auto"] = "auto"
    weights: Literal["per_channel", "per_tensor"] = "per_channel"

    @property
    def kind(self) -> Literal["random", "folder"]:
        """``folder`` when calibration data is read from ``folder``, else ``random``."""
        return "random" if self.folder is None else "folder"

    @classmethod
    def _fill_defaults(cls, data, context):
        if data.get("folder") is None:
            data.setdefault("samples", 16)
            data.setdefault("seed", 1)
        return data

    @classmethod
    def _rules(cls, v, context) -> Iterator[Broken]:
        if v.get("folder") is None:
            return
        for name in ("samples", "seed"):
            if v.get(name) is not None:
                yield broken(f"must be omitted when folder is set (calibration comes from the "
                             f"folder or from random samples, not both); got {v[name]}", name)


def _inputs_kind(value: Any) -> str:
    return "factory" if isinstance(value, str | SourceRef) else "specs"


Inputs = Annotated[
    Annotated[tuple[InputSpec, ...], BeforeValidator(as_tuple), Field(min_length=1), Tag("specs")]
    | Annotated[SourceField, Tag("factory")],
    Discriminator(_inputs_kind),
]


class ModelConfig(RuledModel):
    """One entry of ``models:``.

    Attributes:
        source: the ``nn.Module`` class or factory, ``file.py:Name`` relative to targets.yaml.
        inputs: example inputs as a list of ``InputSpec``, or ``file.py:function`` returning a
            tuple of tensors.
        seed: seed for the random example inputs.
        calibration: how quantization is calibrated.
    """

    source: SourceField
    inputs: Inputs
    seed: Seed = 0
    calibration: Calibration = Field(default_factory=lambda: Calibration(samples=16, seed=1))

    @property
    def source_path(self) -> Path:
        """Absolute path of the model's ``.py`` file."""
        return self.source.path

    @property
    def source_attr(self) -> str:
        """Name of the class or factory inside ``source_path``."""
        return self.source.attr

    @property
    def input_specs(self) -> tuple[InputSpec, ...] | None:
        """The listed inputs, or None when a factory makes them."""
        return None if isinstance(self.inputs, SourceRef) else self.inputs

    @property
    def input_factory(self) -> SourceRef | None:
        """The function that makes the inputs, or None when they are listed."""
        return self.inputs if isinstance(self.inputs, SourceRef) else None

    @classmethod
    def _rules(cls, v, context) -> Iterator[Broken]:
        seen: dict[str, int] = {}
        specs = v.get("inputs")
        for index, spec in enumerate(specs if isinstance(specs, tuple) else ()):
            if spec.name is not None:
                if spec.name in seen:
                    yield broken(f"must be unique among the inputs; got {show(spec.name)} "
                                 f"again (first at inputs[{seen[spec.name]}])",
                                 f"inputs.{index}.name")
                seen.setdefault(spec.name, index)
