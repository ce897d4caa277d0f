"""``x << n``, ``x >> n``, ``bitwise_left_shift`` / ``bitwise_right_shift`` of integer tensors
-> LOGICAL_LEFT_SHIFT / ARITHMETIC_RIGHT_SHIFT (torch shifts signed integers arithmetically).

Integer tensors are never quantized (int64 ids are int32 in the graph). The shift amount is
a number or a tensor of the same type; TOSA requires it in [0, 31] (int32) or the type's
width. A number past that: ``x >> 40`` is the sign fill ``x >> 31`` gives too; ``x << 40``
overflows int32 where torch's int64 would not, and is refused. On Ethos-U55/U65, whose
right shift only rounds, the variant graph rewrites it (``replace_int_ops_pass``).
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.context import LoweringContext
from pipeline.tosa.emit.elementwise import ranked, scalar_const
from pipeline.quant.rules import COVERAGE
from pipeline.tosa.registry import Operator, U55_U65, lowers

LEFT = ("aten.__lshift__.Scalar", "aten.__lshift__.Tensor", "aten.bitwise_left_shift.Tensor",
        "aten.bitwise_left_shift.Tensor_Scalar")  # fmt: skip
RIGHT = ("aten.__rshift__.Scalar", "aten.__rshift__.Tensor", "aten.bitwise_right_shift.Tensor",
         "aten.bitwise_right_shift.Tensor_Scalar")  # fmt: skip
_WIDTH = {"int8": 8, "int16": 16, "int32": 32}


def _amount(node: fx.Node, ctx: LoweringContext, value, dtype: str, left: bool) -> str:
    if isinstance(value, fx.Node):
        if ctx.dtype(value) != dtype or ctx.qparams(value) is not None:
            raise ctx.unsupported(node, f"a {ctx.dtype(value)} shift amount", f"{dtype} amounts")
        return ranked(ctx, node, value)
    width = _WIDTH[dtype]
    if isinstance(value, bool) or int(value) != value or value < 0 or (left and value >= width):
        raise ctx.unsupported(node, f"shift {value!r}", f"a shift in [0, {width - 1}]")
    return scalar_const(ctx, node, min(int(value), width - 1), dtype)


@lowers(*LEFT, *RIGHT)
def visit_shift(node: fx.Node, ctx: LoweringContext) -> None:
    x, amount = node.args[:2]
    dtype = ctx.dtype(x) if isinstance(x, fx.Node) else None
    if dtype not in _WIDTH or ctx.qparams(x) is not None:
        raise ctx.unsupported(node, f"a {dtype or 'number'} operand", "an integer tensor")
    left = str(node.target) in LEFT
    inputs = [ranked(ctx, node, x), _amount(node, ctx, amount, dtype, left)]
    out = ctx.define(node, dtype)
    if left:
        ctx.emit("LOGICAL_LEFT_SHIFT", inputs, [out], node)
    else:
        ctx.emit("ARITHMETIC_RIGHT_SHIFT", inputs, [out], node, round=False)


def u55_int32_shift(op) -> tuple[str, str] | None:
    """Vela 5.2 shifts int32 only on Ethos-U55/U65 ('Non-passthrough operation (SHL)',
    measured); their variant shifts int8/int16 in int32 and wraps (replace_int_ops_pass)."""
    if op.inputs[0].dtype != "int32":
        return "shift int32 values", op.inputs[0].dtype
    return None


OPERATOR = Operator(
    "x << n, x >> n of integer tensors -> LOGICAL_LEFT_SHIFT / ARITHMETIC_RIGHT_SHIFT",
    quant=COVERAGE,
    npu={U55_U65: {"LOGICAL_LEFT_SHIFT": u55_int32_shift}},
)
