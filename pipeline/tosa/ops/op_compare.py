"""aten.eq / ne / gt / ge / lt / le, tensor-tensor and tensor-scalar -> EQUAL / GREATER /
GREATER_EQUAL (lt/le swap the operands; ne is LOGICAL_NOT of EQUAL), a bool output.

TOSA 1.0 PRO-INT compares int32 only, so integer and bool operands are CAST to int32 first.
A quantized operand compares its integer codes: dequantization is monotonic and one-to-one
and the quantizer gives both operands of a comparison one shared quantization (as for
minimum/maximum), so ``dq(x) > dq(y)`` exactly when ``x > y``.

Against a number torch compares the dequantized float32 values. Which codes pass is found by
running torch's own dequantize and comparison over every code of the type (256 for int8,
65536 for int16): dequantization being monotonic, they form one interval ``[lo, hi]``, so the
comparison becomes one or two integer comparisons with constants - bit-exact, ties and
rounding included. An integer tensor against a number gets its interval by arithmetic
(``ids > 2.5`` is ``ids >= 3``).
"""

from __future__ import annotations

import math

import torch
from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.elementwise import ranked, scalar_const
from pipeline.tosa.quant_math import DTYPE_RANGES
from pipeline.quant.rules import shared_inputs
from pipeline.tosa.registry import Operator, lowers

OPS = {"eq": "EQUAL", "ne": "EQUAL", "gt": "GREATER", "ge": "GREATER_EQUAL", "lt": "GREATER",
       "le": "GREATER_EQUAL"}  # fmt: skip
TARGETS = tuple(f"aten.{name}.{kind}" for name in OPS for kind in ("Tensor", "Scalar"))
_FLOATS = ("fp32", "fp16", "bf16")
_INT32_MIN, _INT32_MAX = DTYPE_RANGES["int32"]


def _name(node: fx.Node) -> str:
    return str(node.target).split(".")[1]


def _comparable(ctx: LoweringContext, node: fx.Node, value: fx.Node) -> str:
    """``value`` at ``node``'s rank in a type TOSA compares: float, or int32 (the codes of a
    quantized tensor, integers, bools as 0/1)."""
    source = ranked(ctx, node, value)
    dtype = ctx.graph.tensors[source].dtype
    return source if dtype in (*_FLOATS, "int32") else emit.cast(ctx, node, source, "int32")


def _emit(ctx: LoweringContext, node: fx.Node, op: str, a: str, b: str, negate: bool) -> str:
    """``op(a, b)`` into the node's output, or LOGICAL_NOT of it when ``negate``."""
    out = ctx.temp(node, op.lower(), tosa_shape(node), "bool") if negate else ctx.define(node)
    ctx.emit(op, [a, b], [out], node)
    if negate:
        ctx.emit("LOGICAL_NOT", [out], [ctx.define(node)], node)
    return out


@lowers(*TARGETS)
def visit_compare(node: fx.Node, ctx: LoweringContext) -> None:
    x, other = node.args[:2]
    name = _name(node)
    if not isinstance(other, fx.Node):
        _against_number(node, ctx, x, other)
        return
    if not emit.same_quantization(ctx.qparams(x), ctx.qparams(other)):
        raise ctx.unsupported(
            node, "operands quantized differently", "operands sharing one quantization"
        )
    a, b = _comparable(ctx, node, x), _comparable(ctx, node, other)
    if name in ("lt", "le"):
        a, b = b, a
    _emit(ctx, node, OPS[name], a, b, negate=name == "ne")


def _against_number(node: fx.Node, ctx: LoweringContext, x: fx.Node, value) -> None:
    name = _name(node)
    source = _comparable(ctx, node, x)
    if ctx.graph.tensors[source].dtype in _FLOATS:  # FP profile: compare with the number
        number = scalar_const(ctx, node, float(value), "fp32")
        a, b = (number, source) if name in ("lt", "le") else (source, number)
        _emit(ctx, node, OPS[name], a, b, negate=name == "ne")
        return
    q = ctx.qparams(x)
    equal = "eq" if name == "ne" else name
    lo, hi = _code_interval(node, ctx, q, equal, value) if q else _int_interval(equal, value)
    _emit_interval(ctx, node, source, lo, hi, negate=name == "ne")


def _code_interval(node: fx.Node, ctx: LoweringContext, q, name: str, value):
    """The codes of ``q``'s type whose dequantized value passes ``name`` against ``value``,
    as torch computes it: ``(lo, hi)``, None for an open end, ``(1, 0)`` when none passes."""
    low, high = DTYPE_RANGES[q.dtype]
    codes = torch.arange(low, high + 1, dtype=torch.int32)
    dtype = getattr(torch, q.dtype)
    real = torch.ops.quantized_decomposed.dequantize_per_tensor(
        codes.to(dtype), q.tensor_scale, q.zero_point, low, high, dtype
    )
    passing = torch.nonzero(getattr(torch, name)(real, value)).flatten()
    if passing.numel() == 0:
        return 1, 0
    first, last = int(passing[0]), int(passing[-1])
    if last - first + 1 != passing.numel():  # dequantization is monotonic: never expected
        raise ctx.unsupported(node, f"codes passing {name} {value} not one interval")
    return (None if first == 0 else low + first), (None if last == len(codes) - 1 else low + last)


def _int_interval(name: str, value):
    """The integers ``v`` with ``v <name> value`` (value may be a float or a bool)."""
    value = float(value)
    if name == "eq":
        return (int(value), int(value)) if value.is_integer() else (1, 0)
    return {
        "gt": (math.floor(value) + 1, None),
        "ge": (math.ceil(value), None),
        "lt": (None, math.ceil(value) - 1),
        "le": (None, math.floor(value)),
    }[name]


def _checks(lo, hi) -> list[tuple[str, int, bool]]:
    """``lo <= x <= hi`` (None: unbounded) as int32 comparisons ``(op, bound, bound first)``."""
    lo = None if lo is not None and lo <= _INT32_MIN else lo
    hi = None if hi is not None and hi >= _INT32_MAX else hi
    if (lo is not None and hi is not None and lo > hi) or (lo or 0) > _INT32_MAX or (
        hi or 0
    ) < _INT32_MIN:
        return [("GREATER", _INT32_MAX, False)]  # nothing passes
    if lo is not None and lo == hi:
        return [("EQUAL", lo, False)]
    checks = [("GREATER_EQUAL", lo, False)] if lo is not None else []
    checks += [("GREATER_EQUAL", hi, True)] if hi is not None else []
    return checks or [("GREATER_EQUAL", _INT32_MIN, False)]  # everything passes


def _emit_interval(ctx, node: fx.Node, source: str, lo, hi, negate: bool) -> None:
    """``lo <= source <= hi`` (int32) into the node's bool output (negated for ne)."""
    checks = _checks(lo, hi)
    if len(checks) == 1:
        op, bound, first = checks[0]
        bound = scalar_const(ctx, node, bound, "int32")
        _emit(ctx, node, op, *((bound, source) if first else (source, bound)), negate)
        return
    results = []
    for op, bound, first in checks:
        bound = scalar_const(ctx, node, bound, "int32")
        results.append(ctx.temp(node, "bound", tosa_shape(node), "bool"))
        ctx.emit(op, [bound, source] if first else [source, bound], [results[-1]], node)
    _emit(ctx, node, "LOGICAL_AND", *results, negate)


OPERATOR = Operator(
    "eq / ne / gt / ge / lt / le -> EQUAL / GREATER / GREATER_EQUAL (+ LOGICAL_NOT)",
    quant=shared_inputs(0, 1),
    measured_by=("comparison",),
)
