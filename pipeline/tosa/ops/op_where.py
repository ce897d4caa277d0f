"""aten.where.self -> SELECT. Normalisation writes masked_fill (Scalar and Tensor) and the
where overloads that take numbers as where.self with one-element constants, so
``scores.masked_fill(mask == 0, -1e9)`` and ``torch.where(mask, x, torch.finfo(x.dtype).min)``
both arrive here.

Quantized, SELECT only moves values: both values and the output share one quantization (the
quantizer's rule), so the result is one of the inputs bit for bit. A fill (a one-element
constant such as -1e9 or finfo.min) is not observed: it is quantized with the tensor's
qparams and saturates to their minimum (or maximum) - the most negative score the
calibration saw. See ``pipeline/quant/mask_specs.py`` for why a saturated fill still masks:
the following softmax gives those positions (next to) nothing, as in float. A where of two
fills (an additive mask being built) takes its own qparams and quantizes both fills with them.
"""

from __future__ import annotations

import numpy as np
from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.elementwise import ranked
from pipeline.quant.rules import WHERE
from pipeline.tosa.registry import Operator, lowers


def _fill(ctx: LoweringContext, node: fx.Node, value: fx.Node) -> str | None:
    """A one-element constant as a constant of the output's rank and type (re-quantized to
    the output's qparams if it had others), or None for any other value."""
    data = ctx.const_value(value)
    if data is None or data.numel() != 1:
        return None
    scalar, q, out_q = data.reshape(()).item(), ctx.qparams(value), ctx.qparams(node)
    if out_q is not None:
        scalar = out_q.quantize(scalar if q is None else (scalar - q.zero_point) * q.tensor_scale)
    array = np.full((1,) * len(tosa_shape(node)), scalar)
    return ctx.const(f"{node.name}_fill", array, ctx.dtype(node))


def _value(ctx: LoweringContext, node: fx.Node, value: fx.Node) -> str:
    fill = _fill(ctx, node, value)
    if fill is not None:
        return fill
    source, q, out_q = ranked(ctx, node, value), ctx.qparams(value), ctx.qparams(node)
    if emit.same_quantization(q, out_q):
        return source
    if q is None or out_q is None:
        raise ctx.unsupported(node, "a float value in a quantized graph", "quantized values")
    return emit.requantize(ctx, node, source, q, out_q)


@lowers("aten.where.self")
def visit_where(node: fx.Node, ctx: LoweringContext) -> None:
    condition, a, b = node.args[:3]
    values = [_value(ctx, node, v) for v in (a, b)]
    ctx.emit("SELECT", [ranked(ctx, node, condition), *values], [ctx.define(node)], node)


OPERATOR = Operator(
    "where / masked_fill -> SELECT",
    quant=WHERE,
    measured_by=("where", "masked_fill"),
)
