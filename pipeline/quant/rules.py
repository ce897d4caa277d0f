"""The kinds of quantization rule an operator file declares for the FX targets it lowers
(``pipeline/tosa/ops/op_<name>.py``, ``OPERATOR = Operator(quant=...)``); the annotators
(``annotators.py``) implement each kind and try them in one fixed order.

Cheap to import (no torch): the registry reads these declarations while planning.

- ``BINARY``: each tensor operand and the output get qparams of their own (add, mul, ...).
- ``SHARED``: the output shares its first operand's qparams (the values are moved, compared
  or averaged, never computed); ``ACTIVATION`` likewise, and it fuses into a producer that
  declares ``WEIGHTED``/``WEIGHT_PRODUCT``/``BINARY``/``REDUCTION`` (the producer's RESCALE
  clamps it), so only its output is observed.
- ``weighted()``: ``(x, W[, b])`` of a convolution or linear layer: W per output channel, the
  bias derived from x's and W's scales; ``transposed`` for ``[in, out / groups, ...]`` weights.
- ``weight_product()``: a product whose operand at ``weight`` may be a 2-D parameter
  ``[in, out]`` (``x @ W``): quantized like a linear layer; nothing when it is not one.
- ``TABLE``: a unary function (a lookup table): the tensor operand and the output apart.
- ``REDUCTION``: a sum whose output leaves the input's range: its own output qparams
  (``MEAN``: int8 only; int16 shares the input's).
- ``shared_inputs(*positions)``: the operands at ``positions`` (a list operand spread) and
  the output share the first one's qparams (cat, minimum, comparisons, writes into x).
- ``masked_sum()``: ``x + mask``/``x - mask`` with an additive attention mask built in the
  model: the mask clamped, the output's qparams derived (tried before ``BINARY``).
- ``WHERE``, ``CAST``: ``where`` and ``.to(dtype)``, their own annotators.
- ``COVERAGE``: no rule of its own: the total-coverage pass (``coverage.py``) annotates it
  like any operator (integer and bool tensors are left as they are).
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("masked_sum", "where", "cast", "weighted", "weight_product", "binary",
         "shared_inputs", "reduction", "table", "shared", "coverage")  # fmt: skip


@dataclass(frozen=True)
class Rule:
    """One quantization rule: its kind and the few facts about the operator's arguments that
    kind needs."""

    kind: str
    positions: tuple[int, ...] = ()  # shared_inputs: the operands that share; weight_product:
    # (input, weight[, bias])
    transposed: bool = False  # weighted: weights [in, out / groups, kh, kw]
    activation: bool = False  # shared: fuses into its producer's output
    subtract: bool = False  # masked_sum: ``x - mask`` (the mask is the second operand)
    int16_shared: bool = False  # reduction: int16 shares the input's qparams (a mean: its
    # input's grid is fine enough there, and the lowering then pools with one rounding)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"quantization rule kind must be one of {KINDS}; got {self.kind!r}")


BINARY = Rule("binary")
SHARED = Rule("shared")
ACTIVATION = Rule("shared", activation=True)
TABLE = Rule("table")
REDUCTION = Rule("reduction")
MEAN = Rule("reduction", int16_shared=True)
WHERE = Rule("where")
CAST = Rule("cast")
COVERAGE = Rule("coverage")


def weighted(transposed: bool = False) -> Rule:
    return Rule("weighted", transposed=transposed)


def weight_product(x: int = 0, weight: int = 1, bias: int | None = None) -> Rule:
    """``x @ W`` (operands ``x`` and ``weight``), ``addmm(b, x, W)`` with ``bias`` too."""
    return Rule("weight_product", (x, weight) if bias is None else (x, weight, bias))


def shared_inputs(*positions: int) -> Rule:
    return Rule("shared_inputs", positions)


def masked_sum(subtract: bool = False) -> Rule:
    return Rule("masked_sum", subtract=subtract)
