"""FP-profile forms of the elementwise math functions TOSA 1.0 has no operator for (tan, asin,
acos, atan, the hyperbolic functions and their inverses, logit, expm1, log2/log10/log1p,
erfinv), of the rounding functions (sign, floor, ceil, trunc, round half to even) and of
division by a number with a rounding mode (``x // c``, ``x % c``, ``fmod``).

Written in TOSA FP operators on the node's shape (``emit/fp.py``'s ``_Float``). Where no identity
gives the function, a published minimax polynomial does, accurate to float32 or near it:
atan (Abramowitz & Stegun 4.4.49, |error| <= 2e-8 on [0, 1], reduced there with
``min(|x|, 1/|x|)``), acos/asin (A&S 4.4.46, 2e-8), erfinv (Giles 2010, single precision).
"""

from __future__ import annotations

import math

from pipeline.tosa.context import tosa_shape
from pipeline.tosa.emit.fp import _arg, _Float

# A&S 4.4.49: atan(x) = x * P(x^2) on [0, 1]; 4.4.46: acos(x) = sqrt(1 - x) * P(x) on [0, 1].
_ATAN = (1.0, -0.3333314528, 0.1999355085, -0.1420889944, 0.1065626393, -0.0752896400,
         0.0429096138, -0.0161657367, 0.0028662257)  # fmt: skip
_ACOS = (1.5707963050, -0.2145988016, 0.0889789874, -0.0501743046, 0.0308918810,
         -0.0170881256, 0.0066700901, -0.0012624911)  # fmt: skip
# Giles, "Approximating the erfinv function": w = -log(1 - x^2), central (w < 5) and tail.
_ERFINV_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087,
                   -4.39150654e-06, -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)  # fmt: skip
_ERFINV_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773,
                -0.00367342844, 0.00134934322, 0.000100950558, -0.000200214257)  # fmt: skip


def _poly(f: _Float, x: str, coefficients) -> str:
    """``c0 + c1 x + c2 x^2 + ...`` by Horner's rule."""
    acc = f.const(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = f.add(f.mul(acc, x), c)
    return acc


def _compare(f: _Float, op: str, a: str, b: str) -> str:
    out = f.ctx.temp(f.node, op.lower(), tosa_shape(f.node), "bool")
    f.ctx.emit(op, [a, b], [out], f.node)
    return out


def _negative(f: _Float, x: str) -> str:
    """``x < 0`` (bool)."""
    return _compare(f, "GREATER", f.const(0.0), x)


def _select(f: _Float, cond: str, a: str, b: str, out: str | None = None) -> str:
    return f.op("SELECT", cond, a, b, out=out)


def _odd(f: _Float, x: str, g, out: str) -> None:
    """``sign(x) g(|x|)`` for an odd function ``g`` computed on ``|x|``."""
    value = g(f.op("ABS", x))
    _select(f, _negative(f, x), f.negate(value), value, out)


def _sqrt(f: _Float, x: str) -> str:
    return f.op("POW", x, f.const(0.5))


def _rsub(f: _Float, value: float, x: str) -> str:
    """``value - x``."""
    return f.op("SUB", f.const(value), x)


def tan(f: _Float, x: str, out: str) -> None:
    f.mul(f.op("SIN", x), f.op("RECIPROCAL", f.op("COS", x)), out)


def _atan_abs(f: _Float, a: str) -> str:
    """atan of ``a >= 0``: the polynomial at ``t = min(a, 1/a)``, ``pi/2 - atan(t)`` above 1."""
    t = f.op("MINIMUM", a, f.op("RECIPROCAL", a), nan_mode="PROPAGATE")
    near = f.mul(t, _poly(f, f.mul(t, t), _ATAN))
    return _select(f, _compare(f, "GREATER", a, f.const(1.0)), _rsub(f, math.pi / 2, near), near)


def atan(f: _Float, x: str, out: str) -> None:
    _odd(f, x, lambda a: _atan_abs(f, a), out)


def _acos_abs(f: _Float, a: str) -> str:
    return f.mul(_sqrt(f, _rsub(f, 1.0, a)), _poly(f, a, _ACOS))


def acos(f: _Float, x: str, out: str) -> None:
    """acos(|x|), and ``pi - acos(|x|)`` for negative x."""
    value = _acos_abs(f, f.op("ABS", x))
    _select(f, _negative(f, x), _rsub(f, math.pi, value), value, out)


def asin(f: _Float, x: str, out: str) -> None:
    _odd(f, x, lambda a: _rsub(f, math.pi / 2, _acos_abs(f, a)), out)


def _exp_pair(f: _Float, x: str) -> tuple[str, str]:
    return f.op("EXP", x), f.op("EXP", f.negate(x))


def sinh(f: _Float, x: str, out: str) -> None:
    f.scale(f.op("SUB", *_exp_pair(f, x)), 0.5, out)


def cosh(f: _Float, x: str, out: str) -> None:
    f.scale(f.op("ADD", *_exp_pair(f, x)), 0.5, out)


def asinh(f: _Float, x: str, out: str) -> None:
    """``log(a + sqrt(a^2 + 1))`` on ``a = |x|`` (no cancellation for negative x)."""
    _odd(f, x, lambda a: f.op("LOG", f.op("ADD", a, _sqrt(f, f.add(f.mul(a, a), 1.0)))), out)


def acosh(f: _Float, x: str, out: str) -> None:
    f.op("LOG", f.op("ADD", x, _sqrt(f, f.add(f.mul(x, x), -1.0))), out=out)


def atanh(f: _Float, x: str, out: str) -> None:
    """``(log(1 + x) - log(1 - x)) / 2``."""
    difference = f.op("SUB", f.op("LOG", f.add(x, 1.0)), f.op("LOG", _rsub(f, 1.0, x)))
    f.scale(difference, 0.5, out)


def logit(f: _Float, x: str, out: str) -> None:
    """``log(z) - log(1 - z)``, ``z`` clamped to ``[eps, 1 - eps]`` when eps is given."""
    eps = _arg(f.node, 1, "eps", None)
    z = x if eps is None else f.clamp(x, float(eps), 1.0 - float(eps))
    f.op("SUB", f.op("LOG", z), f.op("LOG", _rsub(f, 1.0, z)), out=out)


def log_base(base: float):
    return lambda f, x, out: f.scale(f.op("LOG", x), 1 / math.log(base), out)


def log1p(f: _Float, x: str, out: str) -> None:
    f.op("LOG", f.add(x, 1.0), out=out)


def expm1(f: _Float, x: str, out: str) -> None:
    f.add(f.op("EXP", x), -1.0, out)


def erfinv(f: _Float, x: str, out: str) -> None:
    """Giles' single-precision form: ``x P(w)``, ``w = -log((1 - x)(1 + x))``, one polynomial
    for ``w < 5`` (in ``w - 2.5``) and one for the tails (in ``sqrt(w) - 3``)."""
    w = f.negate(f.op("LOG", f.mul(_rsub(f, 1.0, x), f.add(x, 1.0))))
    central = _poly(f, f.add(w, -2.5), _ERFINV_CENTRAL)
    tail = _poly(f, f.add(_sqrt(f, w), -3.0), _ERFINV_TAIL)
    f.mul(x, _select(f, _compare(f, "GREATER", f.const(5.0), w), central, tail), out)


def pow_scalar_base(f: _Float, x: str, out: str) -> None:
    """``c ** x`` for a number ``c > 0``: ``exp(x log c)``."""
    f.op("EXP", f.scale(x, math.log(float(f.node.args[0]))), out=out)


# --- rounding ---------------------------------------------------------------------------------
def sign(f: _Float, x: str, out: str) -> None:
    """1, -1 or 0 (two SELECTs)."""
    zero, one, minus = f.const(0.0), f.const(1.0), f.const(-1.0)
    below = _select(f, _negative(f, x), minus, zero)
    _select(f, _compare(f, "GREATER", x, zero), one, below, out)


def trunc(f: _Float, x: str, out: str | None = None) -> str:
    return _select(f, _negative(f, x), f.op("CEIL", x), f.op("FLOOR", x), out)


def round_even(f: _Float, x: str, out: str | None = None) -> str:
    """``floor(x)``, plus 1 above the half and at the half when ``floor(x)`` is odd (torch
    rounds half to even). ``x - floor(x)`` is exact in float32."""
    low = f.op("FLOOR", x)
    fraction = f.op("SUB", x, low)
    odd = f.op("SUB", low, f.scale(f.op("FLOOR", f.scale(low, 0.5)), 2.0))
    half = f.const(0.5)
    at_half = _select(f, _compare(f, "EQUAL", fraction, half), odd, f.const(0.0))
    step = _select(f, _compare(f, "GREATER", fraction, half), f.const(1.0), at_half)
    return f.op("ADD", low, step, out=out)


def round_decimals(f: _Float, x: str, out: str) -> None:
    """``round(x * 10**d) / 10**d`` (``torch.round(x, decimals=d)``)."""
    factor = 10.0 ** int(_arg(f.node, 1, "decimals", 0))
    f.scale(round_even(f, f.scale(x, factor)), 1 / factor, out)


_ROUNDING = {"floor": lambda f, x, out=None: f.op("FLOOR", x, out=out), "trunc": trunc}


def div_mode(f: _Float, x: str, out: str) -> None:
    """``torch.div(x, c, rounding_mode=...)``: the quotient as ``x * (1/c)``, rounded."""
    mode = _arg(f.node, 2, "rounding_mode", None)
    if mode is None:
        f.scale(x, 1 / float(f.node.args[1]), out)
        return
    _ROUNDING[mode](f, f.scale(x, 1 / float(f.node.args[1])), out)


def remainder_of(mode: str):
    """``x - c * rounded(x / c)``: remainder (floor, sign of c) or fmod (trunc, sign of x)."""

    def form(f: _Float, x: str, out: str) -> None:
        divisor = float(f.node.args[1])
        rounded = _ROUNDING[mode](f, f.scale(x, 1 / divisor))
        f.op("SUB", x, f.scale(rounded, divisor), out=out)

    return form
