"""aten._to_copy (``.to(dtype)``, ``.bool()``, ``.float()``) between bool, integer and float
-> CAST, or CAST + RESCALE into a quantized float.

int64 is int32 in the graph, so int64 <-> int32 casts are no-ops. An integer or bool tensor
turned float (``attention_mask.to(torch.float32)``) gets its quantization from the operator
that reads it: the int32 value is RESCALEd by ``1 / scale`` onto the zero point, which is
torch's ``quantize(float(x))`` (int8, and int16 under int16 activations, are their own
codes: scale 1, no operator). A quantized float turned bool is ``x != 0``: its code compared
with the zero point (a float with 0.0). A quantized float turned an integer is truncated
toward zero as torch does: an int8 TABLE, or fixed point (``rounding.py``); an unquantized
float (FP profile) by FLOOR/CEIL and a CAST.
"""

from __future__ import annotations

import numpy as np
from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.functions import fp_math
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.elementwise import scalar_const
from pipeline.tosa.emit.fp import _Float
from pipeline.tosa.quant_math import DTYPE_RANGES, QParams
from pipeline.quant.rules import CAST
from pipeline.tosa.registry import Operator, lowers
from pipeline.tosa.functions.rounding import CODES, Step, emit_step

_FLOATS = ("fp32", "fp16", "bf16")
_INTEGERS = ("int8", "int16", "int32")


def _to_quantized(ctx: LoweringContext, node: fx.Node, source: str) -> None:
    out_q = ctx.qparams(node)
    have = ctx.graph.tensors[source].dtype
    if (have, out_q.scale, out_q.zero_point) == (out_q.dtype, (1.0,), 0):  # its own codes
        ctx.tensors[node] = source
        return
    if have == "bool":
        source = emit.cast(ctx, node, source, "int32")
    emit.rescale(
        ctx, node, source, [1.0 / out_q.tensor_scale], in_zp=0, out_zp=out_q.zero_point,
        out_dtype=out_q.dtype, out=ctx.define(node),
    )  # fmt: skip


def _to_bool(ctx: LoweringContext, node: fx.Node, x: fx.Node, source: str) -> None:
    """``x != 0`` of a float: a quantized code differs from the zero point."""
    q = ctx.qparams(x)
    if q is None:
        zero = scalar_const(ctx, node, 0.0, "fp32")
    else:
        source = emit.cast(ctx, node, source, "int32")
        zero = scalar_const(ctx, node, q.zero_point, "int32")
    equal = ctx.temp(node, "is_zero", tosa_shape(node), "bool")
    ctx.emit("EQUAL", [source, zero], [equal], node)
    ctx.emit("LOGICAL_NOT", [equal], [ctx.define(node)], node)


def _truncated(x_q: QParams, codes: np.ndarray) -> np.ndarray:
    """torch's float -> integer conversion (toward zero) of each code's value, in int64."""
    return np.trunc((codes - x_q.zero_point) * x_q.tensor_scale).astype(np.int64)


def _to_integer(ctx: LoweringContext, node: fx.Node, x_q: QParams, source: str, want: str):
    """A quantized float made an integer, as torch converts (toward zero, wrapping past the
    type like its CPU kernels). int8 whose values fit int8: one TABLE of the 256 codes (then
    CAST wider); otherwise the fixed-point truncation of ``rounding.py``, checked against
    every int16 code, into int32 (CAST narrower: wraps)."""
    if x_q.dtype == "int8":
        values = _truncated(x_q, np.arange(-128, 128))
        fits = values.min() >= -128 and values.max() <= 127
        if fits or want == "int8":
            entries = ctx.const(f"{node.name}_table", values.astype(np.int8), "int8")
            narrow = want == "int8"
            out = ctx.define(node) if narrow else ctx.temp(node, "int8", tosa_shape(node), "int8")
            ctx.emit("TABLE", [source, entries], [out], node)
            if not narrow:
                emit.cast(ctx, node, out, want, out=ctx.define(node))
            return
    low, high = DTYPE_RANGES["int32"]
    int32 = QParams((1.0,), 0, "int32", low, high)
    exact = np.clip(_truncated(x_q, CODES), low, high).astype(np.float64)
    exact[(CODES < x_q.qmin) | (CODES > x_q.qmax)] = np.nan  # codes x never holds
    wide = want == "int32"
    out = ctx.define(node) if wide else ctx.temp(node, "int32", tosa_shape(node), "int32")
    emit_step(node, ctx, Step("trunc"), x_q, int32, exact, out)
    if not wide:
        emit.cast(ctx, node, out, want, out=ctx.define(node))


def _float_to_integer(ctx: LoweringContext, node: fx.Node, source: str, have: str, want: str):
    """FP profile: truncated (CEIL below 0, FLOOR above), then CAST to int32 - exact, the
    value being whole - and CAST narrower, which wraps as torch does (a float CAST to int8
    would saturate)."""
    whole = fp_math.trunc(_Float(ctx, node, have), source)
    wide = want == "int32"
    out = ctx.define(node) if wide else ctx.temp(node, "int32", tosa_shape(node), "int32")
    emit.cast(ctx, node, whole, "int32", out=out)
    if not wide:
        emit.cast(ctx, node, out, want, out=ctx.define(node))


@lowers("aten._to_copy.default")
def visit_to_copy(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    source, x_q, out_q = ctx.tensor(x), ctx.qparams(x), ctx.qparams(node)
    have, want = ctx.graph.tensors[source].dtype, ctx.dtype(node)
    if out_q is not None and x_q is None:
        _to_quantized(ctx, node, source)
    elif out_q is not None and emit.same_quantization(x_q, out_q):  # float -> float
        ctx.tensors[node] = source
    elif out_q is not None:
        emit.requantize(ctx, node, source, x_q, out_q, out=ctx.define(node))
    elif want == "bool" and (x_q is not None or have in _FLOATS):
        _to_bool(ctx, node, x, source)
    elif x_q is not None and want in _INTEGERS:
        _to_integer(ctx, node, x_q, source, want)
    elif have in _FLOATS and want in _INTEGERS:
        _float_to_integer(ctx, node, source, have, want)
    elif x_q is not None or (have in _FLOATS and want not in _FLOATS):
        raise ctx.unsupported(
            node, f"a {have} -> {want} conversion", "bool/integer/float -> bool/integer/float"
        )
    elif have == want:
        ctx.tensors[node] = source
    else:
        emit.cast(ctx, node, source, want, out=ctx.define(node))


OPERATOR = Operator(
    ".to(dtype) between bool, integer and float -> CAST, RESCALE or comparisons",
    quant=CAST,
)
