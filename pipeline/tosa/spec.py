"""The TOSA specification a lowering targets: version, profile and extensions.

Parsed from strings such as ``TOSA-1.0+INT``, ``TOSA-1.0+INT+int16`` or ``TOSA-1.0+FP``.
The spec decides which tensor types a lowered graph may hold and which RESCALE rounding it
uses, so one lowered graph is valid for exactly the targets that accept its spec.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config.tosa_spec import TosaSpec as SpecText  # the one grammar of spec strings
from pipeline.errors import UserError

# Tensor types each profile/extension brings (TOSA 1.0, section 1.5 "Profiles").
_INT_TYPES = frozenset({"bool", "int8", "int32", "shape"})
_FP_TYPES = frozenset({"bool", "fp16", "fp32", "int32", "shape"})
_EXTENSION_TYPES = {
    "int16": {"int16", "int48"},
    "int4": {"int4"},
    "bf16": {"bf16"},
    "fp8e4m3": {"fp8e4m3"},
    "fp8e5m2": {"fp8e5m2"},
}


@dataclass(frozen=True)
class TosaSpec:
    """One TOSA version with the profiles and extensions a target accepts."""

    version: str
    profiles: frozenset[str]
    extensions: frozenset[str]

    @property
    def is_int(self) -> bool:
        return "INT" in self.profiles

    @property
    def is_fp(self) -> bool:
        return "FP" in self.profiles

    @property
    def major_minor(self) -> tuple[int, int]:
        major, minor = self.version.split(".")
        return int(major), int(minor)

    def supports_dtype(self, dtype: str) -> bool:
        """Whether a tensor of ``dtype`` (``int8``, ``fp32``, ...) is legal in this spec."""
        allowed: set[str] = set()
        if self.is_int:
            allowed |= _INT_TYPES
        if self.is_fp:
            allowed |= _FP_TYPES
        for ext in self.extensions:
            allowed |= _EXTENSION_TYPES.get(ext, set())
        return dtype in allowed

    def allowed_dtypes(self) -> list[str]:
        every = set().union(_INT_TYPES, _FP_TYPES, *_EXTENSION_TYPES.values())
        return sorted(d for d in every if self.supports_dtype(d))

    @property
    def rounding_mode(self) -> str:
        """RESCALE rounding: DOUBLE_ROUND only with the doubleround extension (EXT-DOUBLEROUND)."""
        return "DOUBLE_ROUND" if "doubleround" in self.extensions else "SINGLE_ROUND"

    def __str__(self) -> str:
        parts = [f"TOSA-{self.version}", *sorted(self.profiles)]
        return "+".join(parts + sorted(self.extensions))


def parse_spec(text: str, where: str = "") -> TosaSpec:
    """Parse ``TOSA-<version>+<PROFILE>[+<extension>...]`` with the grammar targets.yaml uses.

    Raises:
        UserError: the message of the config's parser, prefixed by ``where``.
    """
    try:
        parsed = SpecText.parse(text.strip())
    except ValueError as exc:
        raise UserError(f"{where + ': ' if where else ''}tosa spec {exc}") from None
    return TosaSpec(parsed.version, frozenset({parsed.profile}), frozenset(parsed.extensions))
