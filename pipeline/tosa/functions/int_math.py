"""The unary functions and divisions of integer tensors (int64 ids are int32 in the graph; no
quantization): abs, neg, sign, the rounding functions (the identity on integers), and
``a // c``, ``a % c``, ``torch.div(a, b, rounding_mode=...)``, ``fmod``.

Division by a number ``c`` avoids INTDIV, which Ethos-U55/U65 lack, with the RESCALE every
Ethos-U runs: ``floor(a / c)`` for ``c > 0`` is ``round_half_up((a - (c - 1) / 2) / c)`` for
odd ``c`` (the quotient stays 1/(2c) away from the rounding boundaries, more than the 31-bit
multiplier's error while ``|a| < 2**29``), ``RESCALE(a - c / 2, 1 / c)`` for ``c = 2**k``
(an exact scale), and ``round_half_up((2a + 1 - c) / (2c))`` for other even ``c``. So the
integer quotient is exact for ``|a| < 2**29``. trunc divides ``|a|`` and restores the sign; a
negative divisor divides ``-a``. A tensor divisor uses INTDIV (truncating; Ethos-U85 only)
and corrects floor division where the remainder's sign differs from the divisor's; so does
an FP-profile graph (RESCALE is an integer-profile operator).
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.elementwise import ranked, scalar_const
from pipeline.tosa.emit.fp import mul_shift

_INTEGERS = ("int8", "int16", "int32")


def _arg(node: fx.Node, index: int, name: str, default):
    return node.args[index] if len(node.args) > index else node.kwargs.get(name, default)


class _Int:
    """Emits int32 operators of one node on its shape."""

    def __init__(self, node: fx.Node, ctx: LoweringContext):
        self.node, self.ctx, self.shape = node, ctx, tosa_shape(node)

    def value(self, x: fx.Node) -> str:
        """``x`` at the node's rank, as int32 (bool and narrower integers CAST up)."""
        if self.ctx.qparams(x) is not None or self.ctx.dtype(x) not in (*_INTEGERS, "bool"):
            raise self.ctx.unsupported(self.node, f"a {self.ctx.dtype(x)} operand",
                                       "integer operands")  # fmt: skip
        source = ranked(self.ctx, self.node, x)
        if self.ctx.graph.tensors[source].dtype == "int32":
            return source
        return emit.cast(self.ctx, self.node, source, "int32")

    def op(self, op: str, *inputs, **attrs) -> str:
        inputs = [scalar_const(self.ctx, self.node, v, "int32") if isinstance(v, int) else v
                  for v in inputs]  # fmt: skip
        if op == "MUL":
            inputs.append(mul_shift(self.ctx, self.node))
        if op in ("MAXIMUM", "MINIMUM"):
            attrs["nan_mode"] = "PROPAGATE"
        out = self.ctx.temp(self.node, op.lower(), self.shape, "int32")
        self.ctx.emit(op, inputs, [out], self.node, **attrs)
        return out

    def constant(self, value: int) -> str:
        return scalar_const(self.ctx, self.node, value, "int32")

    def rescale(self, x: str, scale: float) -> str:
        return emit.rescale(self.ctx, self.node, x, [scale], in_zp=0, out_zp=0,
                            out_dtype="int32", suffix="quotient")  # fmt: skip

    def sign(self, x: str) -> str:
        return self.op("MINIMUM", self.op("MAXIMUM", x, -1), 1)

    def finish(self, value: str) -> None:
        """``value`` (int32) as the node's output, CAST back to a narrower integer type."""
        dtype = self.ctx.dtype(self.node)
        if dtype == "int32":
            self.ctx.emit("IDENTITY", [value], [self.ctx.define(self.node)], self.node)
        else:
            emit.cast(self.ctx, self.node, value, dtype, out=self.ctx.define(self.node))

    # --- division by a number ---------------------------------------------------------------
    def floor_div(self, a: str, c: int) -> str:
        """``floor(a / c)`` exactly for ``|a| < 2**29`` (module docstring)."""
        if c < 0:
            a, c = self.op("SUB", 0, a), -c
        if c == 1:
            return a
        if c & (c - 1) == 0:
            return self.rescale(self.op("ADD", a, -(c // 2)), 1 / c)
        if c % 2:
            return self.rescale(self.op("ADD", a, -(c - 1) // 2), 1 / c)
        return self.rescale(self.op("ADD", self.op("ADD", a, a), 1 - c), 1 / (2 * c))

    def trunc_div(self, a: str, c: int) -> str:
        magnitude = self.floor_div(self.op("ABS", a), abs(c))
        signed = self.op("MUL", magnitude, self.sign(a))
        return self.op("SUB", 0, signed) if c < 0 else signed

    # --- division by a tensor (INTDIV truncates) ---------------------------------------------
    def _bool(self, op: str, a: str, b: str) -> str:
        out = self.ctx.temp(self.node, op.lower(), self.shape, "bool")
        self.ctx.emit(op, [a, b], [out], self.node)
        return out

    def tensor_div(self, a: str, b: str, mode: str, constant: int | None = None) -> str:
        """INTDIV (truncating), less one where a floor division's remainder has the other
        sign than the divisor (known when the divisor is a ``constant``)."""
        quotient = self.op("INTDIV", a, b)
        if mode == "trunc":
            return quotient
        rest = self.op("SUB", a, self.op("MUL", quotient, b))
        zero = scalar_const(self.ctx, self.node, 0, "int32")
        if constant is not None:  # the remainder is on the wrong side of 0: floor is lower
            wrong = self._bool("GREATER", *((zero, rest) if constant > 0 else (rest, zero)))
        else:
            signs_differ = self._bool("LOGICAL_XOR", self._bool("GREATER", zero, rest),
                                      self._bool("GREATER", zero, b))  # fmt: skip
            wrong = self._bool("LOGICAL_AND", signs_differ,
                               self._not(self._bool("EQUAL", rest, zero)))  # fmt: skip
        return self.op("SUB", quotient, emit.cast(self.ctx, self.node, wrong, "int32"))

    def _not(self, x: str) -> str:
        out = self.ctx.temp(self.node, "not", self.shape, "bool")
        self.ctx.emit("LOGICAL_NOT", [x], [out], self.node)
        return out


def _divisor(node: fx.Node, ctx: LoweringContext, value) -> int:
    if isinstance(value, bool) or float(value) != int(value) or int(value) == 0:
        raise ctx.unsupported(node, f"divisor {value!r}", "a non-zero integer divisor")
    return int(value)


def divide(node: fx.Node, ctx: LoweringContext, mode: str, remainder: bool = False) -> None:
    """``a // b`` (floor) or trunc division of integers; ``remainder``: ``a - b * that``."""
    f = _Int(node, ctx)
    a, b = f.value(node.args[0]), node.args[1]
    if isinstance(b, fx.Node) or not ctx.spec.is_int:  # FP profile: no RESCALE, INTDIV
        constant = None if isinstance(b, fx.Node) else _divisor(node, ctx, b)
        divisor = f.value(b) if constant is None else f.constant(constant)
        quotient = f.tensor_div(a, divisor, mode, constant)
    else:
        divisor = _divisor(node, ctx, b)
        quotient = (f.floor_div if mode == "floor" else f.trunc_div)(a, divisor)
    if remainder:
        quotient = f.op("SUB", a, f.op("MUL", quotient, divisor))
    f.finish(quotient)


def _div_mode(node: fx.Node, ctx: LoweringContext) -> None:
    mode = _arg(node, 2, "rounding_mode", None)
    if mode not in ("floor", "trunc"):
        raise ctx.unsupported(node, "true division of integers", "rounding_mode floor or trunc")
    divide(node, ctx, mode)


def _unary(build):
    def form(node: fx.Node, ctx: LoweringContext) -> None:
        f = _Int(node, ctx)
        f.finish(build(f, f.value(node.args[0])))

    return form


INTEGER_FORMS = {
    "aten.abs.default": _unary(lambda f, x: f.op("ABS", x)),
    "aten.neg.default": _unary(lambda f, x: f.op("SUB", 0, x)),
    "aten.sign.default": _unary(lambda f, x: f.sign(x)),
    **dict.fromkeys(("aten.floor.default", "aten.ceil.default", "aten.trunc.default",
                     "aten.round.default"), _unary(lambda f, x: x)),  # fmt: skip
    "aten.div.Tensor_mode": _div_mode,
    "aten.remainder.Scalar": lambda node, ctx: divide(node, ctx, "floor", remainder=True),
    "aten.fmod.Scalar": lambda node, ctx: divide(node, ctx, "trunc", remainder=True),
}
