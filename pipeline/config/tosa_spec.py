"""The TOSA specification a target lowers to: ``TOSA-<version>+<profile>[+<extension>...]``."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BeforeValidator, WithJsonSchema, model_serializer

from pipeline.config.base import StrictModel, problem, show

TosaVersion = Literal["1.0"]
TosaProfile = Literal["INT", "FP"]
# TOSA 1.0 extensions and the profile each one extends (None: either profile).
EXTENSIONS: dict[str, TosaProfile | None] = {
    "int16": "INT", "int4": "INT", "doubleround": "INT", "inexactround": "INT",
    "bf16": "FP", "fp8e4m3": "FP", "fp8e5m2": "FP", "fft": "FP",
    "variable": None, "controlflow": None, "dynamic": None,
}
TosaExtension = Literal[
    "int16", "int4", "doubleround", "inexactround", "bf16", "fp8e4m3", "fp8e5m2", "fft",
    "variable", "controlflow", "dynamic",
]
# Matched with fullmatch: ``$`` alone would also match before a final newline.
_SHAPE = re.compile(r"^TOSA-(\d+\.\d+)\+(\w+)((?:\+\w+)*)$")
FORMAT = "TOSA-<version>+<INT|FP>[+<extension>...]"


class TosaSpec(StrictModel):
    """A parsed TOSA spec; ``str()`` gives it back in canonical form (extensions in table order).

    Attributes:
        version: the specification version (``1.0``).
        profile: ``INT`` (integer, quantized graphs) or ``FP`` (floating point).
        extensions: the enabled extensions, e.g. ``("int16",)``.
    """

    version: TosaVersion
    profile: TosaProfile
    extensions: tuple[TosaExtension, ...] = ()

    def __str__(self) -> str:
        return "+".join([f"TOSA-{self.version}", self.profile, *self.extensions])

    @model_serializer
    def _as_text(self) -> str:
        # Dumps as written in targets.yaml, so a dumped target validates again.
        return str(self)

    def has(self, extension: str) -> bool:
        """Whether ``extension`` is enabled."""
        return extension in self.extensions

    @classmethod
    def parse(cls, text: str) -> TosaSpec:
        """Parse ``TOSA-1.0+INT+int16``.

        Raises:
            ValueError: with a ``must be ...; got ...`` message.
        """
        match = _SHAPE.fullmatch(text)
        if not match:
            raise ValueError(f"must be {FORMAT}, e.g. TOSA-1.0+INT+int16; got {show(text)}")
        version, profile, rest = match.groups()
        if version not in ("1.0",):
            raise ValueError(f"must name TOSA version 1.0; got {show(text)}")
        if profile not in ("INT", "FP"):
            raise ValueError(f"must name profile INT or FP after the version; got {show(text)}")
        names = rest.split("+")[1:]
        for name in names:
            if name not in EXTENSIONS:
                raise ValueError(f"extensions must be among {', '.join(EXTENSIONS)}; "
                                 f"got {show(name)} in {show(text)}")
            needs = EXTENSIONS[name]
            if needs not in (None, profile):
                raise ValueError(f"must use the {needs} profile for extension {name}; "
                                 f"got {show(text)}")
        if len(set(names)) != len(names):
            raise ValueError(f"must name each extension once; got {show(text)}")
        ordered = tuple(n for n in EXTENSIONS if n in names)
        return cls(version=version, profile=profile, extensions=ordered)


def _parse(value):
    if isinstance(value, TosaSpec):
        return value
    if not isinstance(value, str):
        raise problem(f"must be a string {FORMAT}; got {show(value)}")
    try:
        return TosaSpec.parse(value)
    except ValueError as exc:
        raise problem(str(exc)) from None


TosaField = Annotated[
    TosaSpec,
    BeforeValidator(_parse),
    WithJsonSchema({"type": "string", "pattern": _SHAPE.pattern,
                    "examples": ["TOSA-1.0+INT", "TOSA-1.0+INT+int16", "TOSA-1.0+FP"]}),
]
# Every Ethos-U takes int16 tensors (ExecuTorch's Ethos-U specs carry +int16 too); with the
# extension the lowering may keep exact int16 intermediates in an int8 model (e.g. the
# Ethos-U55 global-pool sums). Activations stay int8 unless quantization is a16w8.
DEFAULT_TOSA = TosaSpec(version="1.0", profile="INT", extensions=("int16",))
