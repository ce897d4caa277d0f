"""``a % b`` and ``torch.fmod(a, b)`` of integer tensors by a tensor -> INTDIV and integer
arithmetic (``pipeline/tosa/functions/int_math.py``; Ethos-U85 only: U55/U65 have no INTDIV).

By a number they are unary functions (``unary.py``: a TABLE when quantized); float tensors
by a tensor are written out before quantization (``pipeline/normalise/division.py``).
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.context import LoweringContext
from pipeline.tosa.functions.int_math import divide
from pipeline.quant.rules import COVERAGE
from pipeline.tosa.registry import Operator, lowers


@lowers("aten.remainder.Tensor", "aten.fmod.Tensor")
def visit_remainder(node: fx.Node, ctx: LoweringContext) -> None:
    mode = "floor" if str(node.target).startswith("aten.remainder") else "trunc"
    divide(node, ctx, mode, remainder=True)


OPERATOR = Operator(
    "a % b and fmod(a, b) of integer tensors by a tensor -> INTDIV and integer arithmetic",
    quant=COVERAGE,
)
