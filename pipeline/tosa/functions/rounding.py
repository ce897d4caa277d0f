"""Exact int16 forms of the rounding functions (floor, ceil, round, trunc, sign; division by a
number with a rounding mode; remainder and fmod by a number), in integer arithmetic that
Ethos-U55 and -U85 both run.

int8 looks these up in a 256-entry TABLE (``ops/op_table.py``). The int16 TABLE interpolates
between entries 128 inputs apart, which a step function defeats; so int16 scales the input
to fixed point and rounds with a shift:

    y = RESCALE(x, pre * s_in * 2**k)          int16 -> int32, |y| < 2**29
    n = ARITHMETIC_RIGHT_SHIFT(y + c, k)       round=True (the only mode Ethos-U55 has):
                                               c = -2**(k-1) floors, 2**(k-1) - 1 ceils,
                                               0 rounds half up; trunc floors |y| and
                                               multiplies by sign(y)
    out = RESCALE(n, post / s_out)             remainder: RESCALE(y - (n << k), c 2**-k / s_out)

Whether that equals torch's q/dq math is decided when lowering, over every one of the 65536
int16 codes: the program above is run in numpy (``_run``, the same instructions
``emit_step`` writes) against torch's function in float64, as verify computes it. A product
that lands within the fixed-point error of an integer would show there; then a coarser
``k`` is tried, and failing all, the operator is refused (it never lowers to something
inexact). The one difference allowed: where torch's value lies within 2**-10 LSB of a
rounding tie (``TIE``; RESCALE rounds half up, torch half to even, and a 31-bit multiplier
cannot resolve it), one LSB. Verify reports these layers as not analysed by the error bound
(a shift has no bound), yet they are checked exhaustively here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.elementwise import scalar_const
from pipeline.tosa.emit.fp import mul_shift
from pipeline.tosa.quant_math import DTYPE_RANGES, QParams, apply_scale, encode_scale

FIXED_POINT_LIMIT = 2**29  # |y|: sums with the rounding constants stay inside int32
# Where torch's value is this close to a rounding tie (in output LSBs), rounding it the other
# way is within the 31-bit multipliers' own precision: one LSB there, nowhere else.
TIE = 2.0**-10
CODES = np.arange(-32768, 32768, dtype=np.int64)


@dataclass(frozen=True)
class Step:
    """``post * R(pre * x)`` (plus ``x`` when ``keep``), R one of floor/ceil/round/trunc/sign."""

    mode: str
    pre: float = 1.0
    post: float = 1.0
    keep: bool = False


def _arg(node: fx.Node, index: int, name: str, default):
    return node.args[index] if len(node.args) > index else node.kwargs.get(name, default)


def step_of(node: fx.Node) -> Step | None:
    """The rounding function of ``node`` (None: not one, e.g. ``div`` without a mode)."""
    name = str(node.target)
    if name.startswith(("aten.floor.", "aten.ceil.", "aten.trunc.", "aten.sign.")):
        return Step(name.split(".")[1])
    if name == "aten.round.default":
        return Step("round")
    if name == "aten.round.decimals":
        factor = 10.0 ** int(_arg(node, 1, "decimals", 0))
        return Step("round", factor, 1 / factor)
    divisor = float(node.args[1])
    if name == "aten.div.Tensor_mode":
        mode = _arg(node, 2, "rounding_mode", None)
        return Step(mode, 1 / divisor) if mode else None
    mode = {"aten.remainder.Scalar": "floor", "aten.fmod.Scalar": "trunc"}[name]
    return Step(mode, 1 / divisor, -divisor, keep=True)


# A program is a list of (output, op, operands...): operands name earlier values ("x" is the
# input) or are int32 numbers; RESCALE carries (source, scale, in_zp, out_zp, dtype).
def _program(step: Step, x_q: QParams, out_q: QParams, k: int) -> list[tuple]:
    if step.mode == "sign":  # CLAMP to zp +- 1 keeps int16; the RESCALE scales the sign
        low = x_q.zero_point - 1
        return [("n", "CLAMP", "x", low, low + 2),
                ("out", "RESCALE", "n", step.post / out_q.tensor_scale, x_q.zero_point,
                 out_q.zero_point, out_q.dtype)]  # fmt: skip
    half = 1 << (k - 1)
    prog = [("y", "RESCALE", "x", abs(step.pre) * x_q.tensor_scale * 2**k, x_q.zero_point, 0,
             "int32")]  # fmt: skip
    if step.pre < 0:
        prog.append(("y", "SUB", 0, "y"))
    if step.mode == "trunc":
        prog += [("a", "ABS", "y"), ("a", "ADD", "a", -half), ("a", "ASR", "a", k),
                 ("s", "MAXIMUM", "y", -1), ("s", "MINIMUM", "s", 1),
                 ("n", "MUL", "a", "s")]  # fmt: skip
    else:
        offset = {"floor": -half, "ceil": half - 1, "round": 0}[step.mode]
        prog += [("t", "ADD", "y", offset)] if offset else []
        prog.append(("n", "ASR", "t" if offset else "y", k))
    if not step.keep:
        return prog + [("out", "RESCALE", "n", step.post / out_q.tensor_scale, 0,
                        out_q.zero_point, out_q.dtype)]  # fmt: skip
    # x - c n = c (x / c - n): the fraction y - n 2**k of the fixed-point quotient, times c
    divisor = -step.post
    prog += [("m", "SHL", "n", k), ("r", "SUB", "y", "m")]
    if divisor < 0:
        prog.append(("r", "SUB", 0, "r"))
    return prog + [("out", "RESCALE", "r", abs(divisor) * 2.0**-k / out_q.tensor_scale, 0,
                    out_q.zero_point, out_q.dtype)]  # fmt: skip


def _run(prog: list[tuple], double_round: bool) -> np.ndarray:
    """The program on every int16 code, as TOSA computes it (int64 numpy)."""
    values: dict[str, np.ndarray] = {"x": CODES}

    def get(v):
        return values[v] if isinstance(v, str) else np.int64(v)

    for out, op, *args in prog:
        if op == "RESCALE":
            src, scale, in_zp, out_zp, dtype = args
            multiplier, shift = encode_scale(scale)
            low, high = DTYPE_RANGES[dtype]
            scaled = apply_scale(get(src) - in_zp, multiplier, shift, double_round)
            result = np.clip(scaled + out_zp, low, high)
        elif op == "ASR":
            a, k = get(args[0]), args[1]
            result = (a >> k) + ((a >> (k - 1)) & 1)
        elif op == "SHL":
            result = get(args[0]) << args[1]
        elif op == "CLAMP":
            result = np.clip(get(args[0]), args[1], args[2])
        elif op == "ABS":
            result = np.abs(get(args[0]))
        else:
            a, b = get(args[0]), get(args[1])
            result = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply,
                      "MAXIMUM": np.maximum, "MINIMUM": np.minimum}[op](a, b)  # fmt: skip
        values[out] = result
    return values["out"]


def _exact(node: fx.Node, x_q: QParams, out_q: QParams) -> np.ndarray:
    """torch's q/dq value for every int16 code before rounding, in float64 like verify
    (``pipeline/verify/layers.py``), clipped to the output's range."""
    real = torch.from_numpy((CODES - x_q.zero_point) * x_q.tensor_scale)
    value = node.target(real, *node.args[1:], **node.kwargs).numpy()
    return np.clip(value / out_q.tensor_scale + out_q.zero_point, out_q.qmin, out_q.qmax)


def plan(node: fx.Node, ctx: LoweringContext, step: Step, x_q: QParams, out_q: QParams,
         exact: np.ndarray | None = None):  # fmt: skip
    """The exact program for ``node`` (see the module docstring), or an unsupported error;
    ``exact``: what it must compute for every int16 code (NaN: any value, a code the input
    never holds), if not torch's q/dq value."""
    exact = _exact(node, x_q, out_q) if exact is None else exact
    expected = np.round(exact)
    largest = abs(step.pre) * x_q.tensor_scale * 65535
    top = min(31, math.floor(math.log2(FIXED_POINT_LIMIT / largest)))
    double_round = ctx.spec.rounding_mode == "DOUBLE_ROUND"
    for k in range(top, max(top - 3, 0), -1):
        prog = _program(step, x_q, out_q, k)
        got = np.clip(_run(prog, double_round), out_q.qmin, out_q.qmax)
        if np.all((got == expected) | (np.abs(got - exact) <= 0.5 + TIE) | np.isnan(exact)):
            return prog
    raise ctx.unsupported(
        node, "int16 scales no integer form rounds exactly like torch",
        "int8, or int16 scales whose products do not land on integers",
    )


def emit_step(node: fx.Node, ctx: LoweringContext, step: Step, x_q: QParams, out_q: QParams,
              exact: np.ndarray | None = None, out: str | None = None):  # fmt: skip
    """Lower int16 ``node`` with the exact program ``plan`` finds (into ``out``, by default
    the node's own tensor)."""
    shape = tosa_shape(node)
    values = {"x": ctx.tensor(node.args[0])}
    final = out

    def get(v):
        return values[v] if isinstance(v, str) else scalar_const(ctx, node, v, "int32")

    for out, op, *args in plan(node, ctx, step, x_q, out_q, exact):
        if op == "RESCALE":
            src, scale, in_zp, out_zp, dtype = args
            target = (final or ctx.define(node)) if out == "out" else None
            values[out] = emit.rescale(
                ctx, node, values[src], [scale], in_zp=in_zp, out_zp=out_zp, out_dtype=dtype,
                out=target, suffix=out,
            )  # fmt: skip
            continue
        dtype = ctx.graph.tensors[values[args[0]]].dtype if op == "CLAMP" else "int32"
        result = ctx.temp(node, out, shape, dtype)
        attrs, inputs = {}, [get(a) for a in args]
        if op == "ASR":
            op, attrs = "ARITHMETIC_RIGHT_SHIFT", {"round": True}
        elif op == "SHL":
            op = "LOGICAL_LEFT_SHIFT"
        elif op == "CLAMP":
            inputs, attrs = inputs[:1], {"min_val": args[1], "max_val": args[2],
                                         "nan_mode": "PROPAGATE"}  # fmt: skip
        elif op in ("MAXIMUM", "MINIMUM"):
            attrs = {"nan_mode": "PROPAGATE"}
        elif op == "MUL":
            inputs.append(mul_shift(ctx, node))
        ctx.emit(op, inputs, [result], node, **attrs)
        values[out] = result
