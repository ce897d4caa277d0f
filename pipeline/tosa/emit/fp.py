"""FP-profile emission: MUL's shift operand, and the float forms of the unary functions that
are int8/int16 TABLEs when quantized (``ops/op_table.py``).

A float program has no table to look up, so each function is written out in TOSA 1.0 FP
operators (SIGMOID, TANH, ERF, EXP, LOG, RSQRT, POW, ABS, NEGATE, MUL, ADD, SUB, CLAMP,
MAXIMUM, MINIMUM) on the node's own shape. Scalars are one-element constants of the node's
rank (TOSA broadcasts only between equal ranks). The forms avoid overflow where torch's own
kernels do: softplus (and mish) as ``max(x, 0) + log(1 + exp(-|x|))``, never ``exp(x)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from torch import fx

from pipeline.tosa.emit.activation import FLOAT_MAX
from pipeline.tosa.context import LoweringContext, tosa_shape


def mul_shift(ctx: LoweringContext, node: fx.Node) -> str:
    """MUL's ``shift`` operand (0): int8 in every profile, so also in an FP-only graph."""
    return ctx.graph.add_const(f"{node.name}_shift", np.array([0]), "int8", any_profile=True)


@dataclass
class _Float:
    """Emits the operators of one node's float form; every tensor has the node's shape."""

    ctx: LoweringContext
    node: fx.Node
    dtype: str

    def const(self, value: float) -> str:
        shape = (1,) * len(tosa_shape(self.node))
        data = np.full(shape, value, dtype=np.float16 if self.dtype == "fp16" else np.float32)
        return self.ctx.graph.add_const(f"{self.node.name}_scalar", data, self.dtype)

    def op(self, op: str, *inputs: str, out: str | None = None, **attrs) -> str:
        out = out or self.ctx.temp(self.node, op.lower(), tosa_shape(self.node), self.dtype)
        self.ctx.emit(op, list(inputs), [out], self.node, **attrs)
        return out

    def mul(self, a: str, b: str, out: str | None = None) -> str:
        return self.op("MUL", a, b, mul_shift(self.ctx, self.node), out=out)

    def scale(self, x: str, factor: float, out: str | None = None) -> str:
        return self.mul(x, self.const(factor), out)

    def add(self, x: str, value: float, out: str | None = None) -> str:
        return self.op("ADD", x, self.const(value), out=out)

    def clamp(self, x: str, lo: float, hi: float, out: str | None = None) -> str:
        return self.op("CLAMP", x, out=out, min_val=lo, max_val=hi, nan_mode="PROPAGATE")

    def negate(self, x: str, out: str | None = None) -> str:
        zero_points = [
            self.ctx.zero_point(f"{self.node.name}_{io}_zp", 0, self.dtype) for io in ("in", "out")
        ]
        return self.op("NEGATE", x, *zero_points, out=out)

    def softplus(self, x: str, out: str | None = None) -> str:
        """``log(1 + exp(x))`` as ``max(x, 0) + log(1 + exp(-|x|))``: no overflow."""
        tail = self.op("LOG", self.add(self.op("EXP", self.negate(self.op("ABS", x))), 1.0))
        return self.op("ADD", self.clamp(x, 0.0, FLOAT_MAX), tail, out=out)


def _arg(node: fx.Node, index: int, name: str, default):
    return node.args[index] if len(node.args) > index else node.kwargs.get(name, default)


def _gelu(f: _Float, x: str, out: str) -> None:
    if _arg(f.node, 1, "approximate", "none") == "tanh":
        # 0.5 x (1 + tanh(k x (1 + 0.044715 x^2))), k = sqrt(2 / pi)
        k = math.sqrt(2 / math.pi)
        inner = f.mul(x, f.add(f.scale(f.mul(x, x), 0.044715 * k), k))
        shape = f.add(f.op("TANH", inner), 1.0)
    else:  # 0.5 x (1 + erf(x / sqrt(2)))
        shape = f.add(f.op("ERF", f.scale(x, 1 / math.sqrt(2))), 1.0)
    f.mul(f.scale(x, 0.5), shape, out)


def _hardsigmoid(f: _Float, x: str, out: str | None = None) -> str:
    """clamp(x / 6 + 1/2, 0, 1) = relu6(x + 3) / 6."""
    return f.clamp(f.add(f.scale(x, 1 / 6), 0.5), 0.0, 1.0, out)


def _leaky_relu(f: _Float, x: str, out: str) -> None:
    """max(x, slope x) for slope <= 1 (negative slopes too), min(x, slope x) above 1."""
    slope = float(_arg(f.node, 1, "negative_slope", 0.01))
    f.op(
        "MAXIMUM" if slope <= 1 else "MINIMUM", x, f.scale(x, slope), out=out, nan_mode="PROPAGATE"
    )


def _elu(f: _Float, x: str, out: str) -> None:
    """scale (max(x, 0) + alpha (exp(input_scale min(x, 0)) - 1))."""
    alpha, scale, input_scale = (
        float(_arg(f.node, i, name, 1.0))
        for i, name in ((1, "alpha"), (2, "scale"), (3, "input_scale"))
    )
    negative = f.clamp(x, -FLOAT_MAX, 0.0)
    if input_scale != 1.0:
        negative = f.scale(negative, input_scale)
    decay = f.scale(f.add(f.op("EXP", negative), -1.0), alpha)
    total = f.op("ADD", f.clamp(x, 0.0, FLOAT_MAX), decay, out=out if scale == 1.0 else None)
    if scale != 1.0:
        f.scale(total, scale, out)


def _softplus(f: _Float, x: str, out: str) -> None:
    """log(1 + exp(beta x)) / beta, and x itself where ``beta x > threshold`` like torch.
    From torch's default threshold 20 up the two differ by under exp(-20) / beta, below
    float32 resolution at those x, so the GREATER + SELECT is left out."""
    beta = float(_arg(f.node, 1, "beta", 1.0))
    threshold = float(_arg(f.node, 2, "threshold", 20.0))
    scaled = x if beta == 1.0 else f.scale(x, beta)
    exact = threshold >= 20.0
    soft = f.softplus(scaled, out if exact and beta == 1.0 else None)
    if beta != 1.0:
        soft = f.scale(soft, 1 / beta, out if exact else None)
    if not exact:
        shape = tosa_shape(f.node)
        above = f.ctx.temp(f.node, "above_threshold", shape, "bool")
        f.ctx.emit("GREATER", [scaled, f.const(threshold)], [above], f.node)
        f.op("SELECT", above, x, soft, out=out)


def _unary(op: str) -> Callable:
    return lambda f, x, out: f.op(op, x, out=out)


FLOAT_FORMS: dict[str, Callable[[_Float, str, str], object]] = {
    "aten.gelu.default": _gelu,
    "aten.sigmoid.default": _unary("SIGMOID"),
    "aten.tanh.default": _unary("TANH"),
    "aten.hardswish.default": lambda f, x, out: f.mul(x, _hardsigmoid(f, x), out),
    "aten.hardsigmoid.default": _hardsigmoid,
    "aten.silu.default": lambda f, x, out: f.mul(x, f.op("SIGMOID", x), out),
    "aten.elu.default": _elu,
    "aten.leaky_relu.default": _leaky_relu,
    "aten.exp.default": _unary("EXP"),
    "aten.reciprocal.default": _unary("RECIPROCAL"),
    "aten.rsqrt.default": _unary("RSQRT"),
    # POW(x, 0.5): exact at 0, where x * RSQRT(x) would be 0 * inf.
    "aten.sqrt.default": lambda f, x, out: f.op("POW", x, f.const(0.5), out=out),
    "aten.log.default": _unary("LOG"),
    "aten.erf.default": _unary("ERF"),
    "aten.abs.default": _unary("ABS"),
    "aten.neg.default": lambda f, x, out: f.negate(x, out),
    "aten.mish.default": lambda f, x, out: f.mul(x, f.op("TANH", f.softplus(x)), out),
    "aten.softplus.default": _softplus,
}


def emit_float_unary(node: fx.Node, ctx: LoweringContext) -> None:
    """The float form of ``node`` (a ``FLOAT_FORMS`` target) into ``node``'s output."""
    x = ctx.tensor(node.args[0])
    f = _Float(ctx, node, ctx.graph.tensors[x].dtype)
    FLOAT_FORMS[str(node.target)](f, x, ctx.define(node))
