"""aten.logical_and / or / xor / not and bitwise_and / or / xor / not -> LOGICAL_* on bools,
BITWISE_* on integers (``mask_a & mask_b``, ``~mask`` of bool masks are bitwise ops in torch).

logical_* of integers means "non-zero": those operands are CAST to bool first (TOSA's
integer-to-bool CAST is exactly ``x != 0``). Quantized (float) operands are not lowered. The
Scalar forms (``ids & 1``) take the number as a constant of the tensor's type.
"""

from __future__ import annotations

import numpy as np
from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.elementwise import ranked
from pipeline.quant.rules import COVERAGE
from pipeline.tosa.registry import Operator, lowers

LOGICAL = {
    "aten.logical_and.default": "AND",
    "aten.logical_or.default": "OR",
    "aten.logical_xor.default": "XOR",
    "aten.logical_not.default": "NOT",
}
BITWISE = {
    "aten.bitwise_and.Tensor": "AND",
    "aten.bitwise_or.Tensor": "OR",
    "aten.bitwise_xor.Tensor": "XOR",
    "aten.bitwise_not.default": "NOT",
    # With a number: ``ids & 1``, ``flags | 4``, ``x ^ 0xFF`` (a constant operand).
    "aten.bitwise_and.Scalar": "AND",
    "aten.bitwise_or.Scalar": "OR",
    "aten.bitwise_xor.Scalar": "XOR",
}


def _operand(ctx: LoweringContext, node: fx.Node, x: fx.Node, dtype: str) -> str:
    if ctx.qparams(x) is not None or ctx.dtype(x) not in ("bool", "int8", "int16", "int32"):
        kind = "quantized " if ctx.qparams(x) is not None else ""
        raise ctx.unsupported(
            node, f"a {kind}{ctx.dtype(x)} operand", "bool or integer (int8/16/32) operands"
        )
    source = ranked(ctx, node, x)
    if ctx.graph.tensors[source].dtype == dtype:
        return source
    return emit.cast(ctx, node, source, dtype)


def _number(ctx: LoweringContext, node: fx.Node, value, dtype: str) -> str:
    if isinstance(value, float):
        raise ctx.unsupported(node, f"operand {value!r}", "integer or bool operands")
    data = np.full((1,) * len(tosa_shape(node)), bool(value) if dtype == "bool" else int(value))
    return ctx.graph.add_const(f"{node.name}_operand", data, dtype)


@lowers(*LOGICAL, *BITWISE)
def visit_logical(node: fx.Node, ctx: LoweringContext) -> None:
    name = str(node.target)
    unary = name.startswith(("aten.logical_not", "aten.bitwise_not"))
    operands = list(node.args[: 1 if unary else 2])
    if not isinstance(operands[0], fx.Node) or not name.endswith(".Scalar") and not all(
        isinstance(a, fx.Node) for a in operands
    ):
        raise ctx.unsupported(node, "a number operand", "tensor operands")
    out_dtype = ctx.dtype(node)
    family = "LOGICAL" if name in LOGICAL or out_dtype == "bool" else "BITWISE"
    dtype = "bool" if family == "LOGICAL" else out_dtype
    inputs = [_operand(ctx, node, x, dtype) if isinstance(x, fx.Node)
              else _number(ctx, node, x, dtype) for x in operands]  # fmt: skip
    ctx.emit(f"{family}_{(LOGICAL | BITWISE)[name]}", inputs, [ctx.define(node, dtype)], node)


OPERATOR = Operator(
    "logical_* / bitwise_* -> LOGICAL_* on bools, BITWISE_* on integers",
    quant=COVERAGE,
)
