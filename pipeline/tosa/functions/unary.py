"""The elementwise functions of one tensor that lower as lookup TABLEs when quantized: one line
each, read by ``ops/op_table.py`` (the visitor) and by the quantizer (each gets its own
output qparams, ``op_table.py``'s ``TABLE`` rule, ``pipeline/quant/annotators.py``).

An entry says what differs between functions; what they share - the int8 TABLE of torch's
own kernel over the 256 codes, the interpolated int16 TABLE - is the visitor's:

* ``float_form``: the function in TOSA FP operators (``emit/fp.py``, ``fp_math.py``);
* ``domain``: where the function is defined. A code whose real value lies outside (the edge
  codes of a quantization grid can round past ±1: ``acos`` of ``-1.0025``) takes the value at
  the nearest edge - torch computes NaN there, which its quantize turns into code 0 by
  accident of the float-to-int conversion. Infinities at an edge (``log(0)``, ``atanh(1)``)
  saturate to the type's range like torch's quantize;
* ``rounding``: a step function (floor, round, ``x // c``, ...): int16 in exact fixed-point
  arithmetic (``rounding.py``), not the interpolated TABLE;
* ``integer``: its form on integer tensors (int32 ids, which need no quantization);
* ``int16``: its own int16 form instead of the interpolated TABLE (``piecewise.py``: the
  kinks of hardswish and hardsigmoid fall between the TABLE's entries);
* ``input``: the tensor argument (``2 ** x`` is ``pow.Scalar(2, x)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from pipeline.tosa.functions import fp_math
from pipeline.tosa.emit.fp import FLOAT_FORMS
from pipeline.tosa.functions.int_math import INTEGER_FORMS
from pipeline.tosa.functions.piecewise import emit_hard
from pipeline.tosa.functions.rounding import step_of

REALS = (-math.inf, math.inf)
UNIT = (-1.0, 1.0)
NON_NEGATIVE = (0.0, math.inf)


@dataclass(frozen=True)
class Function:
    float_form: Callable
    domain: tuple[float, float] = REALS
    rounding: bool = False
    integer: Callable | None = None
    input: int = 0
    int16: Callable | None = None


def _existing(target: str, domain=REALS) -> Function:
    return Function(FLOAT_FORMS[target], domain, integer=INTEGER_FORMS.get(target))


def _unary(op: str) -> Callable:
    return lambda f, x, out: f.op(op, x, out=out)


def _rounding(form: Callable, target: str) -> Function:
    return Function(form, rounding=True, integer=INTEGER_FORMS.get(target))


FUNCTIONS: dict[str, Function] = {
    **{target: _existing(target) for target in FLOAT_FORMS},
    "aten.log.default": _existing("aten.log.default", NON_NEGATIVE),
    "aten.sqrt.default": _existing("aten.sqrt.default", NON_NEGATIVE),
    "aten.rsqrt.default": _existing("aten.rsqrt.default", NON_NEGATIVE),
    "aten.hardsigmoid.default": Function(FLOAT_FORMS["aten.hardsigmoid.default"], int16=emit_hard),
    "aten.hardswish.default": Function(FLOAT_FORMS["aten.hardswish.default"], int16=emit_hard),
    # Trigonometric and hyperbolic functions and their inverses.
    "aten.sin.default": Function(_unary("SIN")),
    "aten.cos.default": Function(_unary("COS")),
    "aten.tan.default": Function(fp_math.tan),
    "aten.asin.default": Function(fp_math.asin, UNIT),
    "aten.acos.default": Function(fp_math.acos, UNIT),
    "aten.atan.default": Function(fp_math.atan),
    "aten.sinh.default": Function(fp_math.sinh),
    "aten.cosh.default": Function(fp_math.cosh),
    "aten.asinh.default": Function(fp_math.asinh),
    "aten.acosh.default": Function(fp_math.acosh, (1.0, math.inf)),
    "aten.atanh.default": Function(fp_math.atanh, UNIT),
    # Logarithms, exponentials, logit, erfinv.
    "aten.logit.default": Function(fp_math.logit, (0.0, 1.0)),
    "aten.expm1.default": Function(fp_math.expm1),
    "aten.log2.default": Function(fp_math.log_base(2.0), NON_NEGATIVE),
    "aten.log10.default": Function(fp_math.log_base(10.0), NON_NEGATIVE),
    "aten.log1p.default": Function(fp_math.log1p, (-1.0, math.inf)),
    "aten.erfinv.default": Function(fp_math.erfinv, UNIT),
    "aten.pow.Scalar": Function(fp_math.pow_scalar_base, input=1),
    # Step functions: exact int8 TABLEs, exact int16 fixed point (rounding.py).
    "aten.sign.default": _rounding(fp_math.sign, "aten.sign.default"),
    "aten.floor.default": _rounding(_unary("FLOOR"), "aten.floor.default"),
    "aten.ceil.default": _rounding(_unary("CEIL"), "aten.ceil.default"),
    "aten.trunc.default": _rounding(fp_math.trunc, "aten.trunc.default"),
    "aten.round.default": _rounding(fp_math.round_even, "aten.round.default"),
    "aten.round.decimals": _rounding(fp_math.round_decimals, "aten.round.decimals"),
    # Division by a number with a rounding mode (a tensor divisor is written out before
    # quantization, pipeline/normalise/division.py; integer tensors divide in int_math.py).
    "aten.div.Tensor_mode": _rounding(fp_math.div_mode, "aten.div.Tensor_mode"),
    "aten.remainder.Scalar": _rounding(fp_math.remainder_of("floor"), "aten.remainder.Scalar"),
    "aten.fmod.Scalar": _rounding(fp_math.remainder_of("trunc"), "aten.fmod.Scalar"),
}

__all__ = ["FUNCTIONS", "Function", "step_of"]
