"""aten.logical_and / or / xor / not and bitwise_and / or / xor / not -> LOGICAL_* on bools,
BITWISE_* on integers (``mask_a & mask_b``, ``~mask`` of bool masks are bitwise ops in torch).

logical_* of integers means "non-zero": those operands are CAST to bool first (TOSA's
integer-to-bool CAST is exactly ``x != 0``). Quantized (float) operands are not lowered.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.context import LoweringContext
from pipeline.tosa.elementwise import ranked
from pipeline.tosa.registry import lowers

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
}


def _operand(ctx: LoweringContext, node: fx.Node, x: fx.Node, dtype: str) -> str:
    if ctx.qparams(x) is not None or ctx.dtype(x) not in ("bool", "int32"):
        raise ctx.unsupported(node, f"a {ctx.dtype(x)} operand", "bool or integer operands")
    source = ranked(ctx, node, x)
    if ctx.graph.tensors[source].dtype == dtype:
        return source
    return emit.cast(ctx, node, source, dtype)


@lowers(*LOGICAL, *BITWISE)
def visit_logical(node: fx.Node, ctx: LoweringContext) -> None:
    name = str(node.target)
    operands = [a for a in node.args[:2] if isinstance(a, fx.Node)]
    if len(operands) != (1 if name.startswith(("aten.logical_not", "aten.bitwise_not")) else 2):
        raise ctx.unsupported(node, "a number operand", "tensor operands")
    out_dtype = ctx.dtype(node)
    family = "LOGICAL" if name in LOGICAL or out_dtype == "bool" else "BITWISE"
    dtype = "bool" if family == "LOGICAL" else out_dtype
    inputs = [_operand(ctx, node, x, dtype) for x in operands]
    ctx.emit(f"{family}_{(LOGICAL | BITWISE)[name]}", inputs, [ctx.define(node, dtype)], node)
