"""aten.pow.Tensor_Scalar (``x ** c`` for a number ``c``) -> int8 TABLE; int16 MULs (``x ** 2``,
``x ** 3``) or TABLE; float MULs or POW.

int8: every exponent is a 256-entry TABLE of torch's own pow (``op_table.py``): exact, and
Vela fuses it into the producing operation. A MUL of ``x * x`` is cheaper only on a graph
input (Vela 5.2, 16x16x16: U55-128 3,072 vs 4,672 cycles); after a producer the TABLE wins
(conv -> ``x ** 2``: 10,800 vs 13,252 cycles on U55-128, 3,796 vs 4,820 on U85-256;
sub -> ``x ** 2``: 6,144 vs 9,216 and 1,024 vs 2,048).
int16: ``x ** 2`` is one int32 MUL of the input with itself (|x| <= 32767: no overflow) and
one RESCALE by ``s_x**2 / s_out``: exact. ``x ** 3`` rounds that square to int16 (steps of
``max|x|**2 / 32767``) and multiplies it by x as int16 x int16: half an LSB more (Vela 5.2,
16x16x16: 6,144 cycles on U55-128, 2,048 on U85-256; an int32 x int32 MUL after an int32
RESCALE took 29,696 and 22,144). Not the interpolated int16 TABLE: its entry past the last
input (32768) saturates when the output range ends at ``max|x|**3``, so its last segment
comes out up to 3 LSBs low. Other exponents use that TABLE (steep ones, ``x ** 0.5`` or
``x ** -1`` near 0, are off by more: verify says so).
Float: integer exponents multiply (TOSA's POW is undefined for x < 0; ``x ** -2`` is a
RECIPROCAL of the product), others are a POW by a constant.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.elementwise import narrow, scalar_const, widen
from pipeline.tosa.emit.fp import mul_shift
from pipeline.tosa.ops.op_table import visit_table
from pipeline.quant.rules import TABLE
from pipeline.tosa.registry import Operator, lowers

MAX_FLOAT_PRODUCT = 8  # |integer exponent| up to which a float pow is a chain of MULs


def _product(node: fx.Node, ctx: LoweringContext, exponent: int) -> None:
    """int16 ``x ** 2`` or ``x ** 3`` as MULs (see the module docstring)."""
    x = node.args[0]
    scale, zero_point = ctx.qparams(x).tensor_scale, ctx.qparams(x).zero_point
    power, unit = widen(ctx, node, x, 1.0, "in0"), scale  # x ** k in int32 steps of ``unit``
    for k in range(2, exponent + 1):
        if k > 2:  # x ** (k - 1) in int16 steps of max|x| ** (k - 1) / 32767
            step = unit * 32767
            power = emit.rescale(ctx, node, power, [unit / step], in_zp=0, out_zp=0,
                                 out_dtype="int32" if zero_point else "int16",
                                 suffix=f"power{k - 1}")  # fmt: skip
            unit = step
        product = ctx.temp(node, f"power{k}", tosa_shape(node), "int32")
        # x * x: a widening RESCALE per operand, as for x * y (Vela fuses each into the MUL);
        # then int16 x int16 (symmetric int16: no zero point to take off).
        direct = k > 2 and zero_point == 0
        other = ctx.tensor(x) if direct else widen(ctx, node, x, 1.0, f"in{k - 1}")
        ctx.emit("MUL", [power, other, mul_shift(ctx, node)], [product], node)
        power, unit = product, unit * scale
    narrow(ctx, node, power, unit)


def _float(node: fx.Node, ctx: LoweringContext, exponent: float) -> None:
    x, shape = ctx.tensor(node.args[0]), tosa_shape(node)
    dtype = ctx.graph.tensors[x].dtype
    count = int(abs(exponent))
    if exponent != int(exponent) or not 1 <= count <= MAX_FLOAT_PRODUCT:
        power = scalar_const(ctx, node, exponent, dtype)
        ctx.emit("POW", [x, power], [ctx.define(node)], node)
        return
    result = x
    for i in range(1, count):
        last = i == count - 1 and exponent > 0
        step = ctx.define(node) if last else ctx.temp(node, f"power{i + 1}", shape, dtype)
        ctx.emit("MUL", [result, x, mul_shift(ctx, node)], [step], node)
        result = step
    if exponent < 0:
        ctx.emit("RECIPROCAL", [result], [ctx.define(node)], node)
    elif count == 1:
        ctx.emit("IDENTITY", [x], [ctx.define(node)], node)


@lowers("aten.pow.Tensor_Scalar")
def visit_pow(node: fx.Node, ctx: LoweringContext) -> None:
    x, exponent = node.args[0], float(node.args[1])
    x_q, out_q = ctx.qparams(x), ctx.qparams(node)
    if x_q is None and out_q is None:
        _float(node, ctx, exponent)
    elif exponent in (2, 3) and x_q is not None and x_q.dtype == "int16" and out_q is not None:
        _product(node, ctx, int(exponent))
    else:
        visit_table(node, ctx)  # its types check too


OPERATOR = Operator(
    "x ** c for a number c -> int8 TABLE; int16 MULs for small integer powers",
    quant=TABLE,
)
