"""ADD / SUB of an operand far coarser than the output: an additive attention mask.

``scores + mask`` with ``mask`` in ``{0, -10000}`` (or ``finfo.min``, ``-inf``): the quantizer
gives the output the scores' range plus a margin (``pipeline/quant/mask_specs.py``), so one
step of the mask's quantization can be many times - 1e36 times for finfo.min - the
output's. The common-scale ADD (``elementwise.py``) would then leave the scores no bits.
Here the scores are rescaled into the output's steps, and the mask's codes into them too
after a CLAMP to the few codes around its zero point that can land inside the output's
range (any further one saturates it anyway): ``(mask - zp) * ratio`` stays small, and one
RESCALE (scale 1) adds the zero point and clamps. A mask code at its zero point adds exactly
0 and a masked one saturates, as in torch's q/dq graph; only codes in between (none in a
0/fill mask) are rounded twice, within one step of torch.
"""

from __future__ import annotations

import math

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.elementwise import LEFT_SHIFT, narrow, ranked, widen
from pipeline.tosa.quant_math import DTYPE_RANGES, QParams, encode_scale

_X_BITS = 8  # the common scale keeps fewer fractional bits of x than this: this path instead


def _real_range(q: QParams) -> tuple[float, float]:
    return (q.qmin - q.zero_point) * q.tensor_scale, (q.qmax - q.zero_point) * q.tensor_scale


def _within(inner: QParams, outer: QParams) -> bool:
    """Whether ``inner``'s real range lies in ``outer``'s (to half an ``outer`` step)."""
    (inner_lo, inner_hi), (outer_lo, outer_hi) = _real_range(inner), _real_range(outer)
    slack = outer.tensor_scale / 2
    return inner_lo >= outer_lo - slack and inner_hi <= outer_hi + slack


def masked_operands(node: fx.Node, ctx: LoweringContext) -> tuple[fx.Node, fx.Node] | None:
    """``(x, mask)`` when ``node`` (ADD or SUB) adds to ``x`` an operand so much coarser that
    the common scale would keep fewer than ``_X_BITS`` bits of ``x`` below its step (the
    output's rounding would then round ``x`` a second time), and the output's range holds
    ``x``'s."""
    out_q = ctx.qparams(node)
    operands = [a for a in node.args[:2] if isinstance(a, fx.Node)]
    if out_q is None or len(operands) != 2:
        return None
    orders = [operands] if str(node.target) == "aten.sub.Tensor" else [operands, operands[::-1]]
    for x, mask in orders:
        x_q, mask_q = ctx.qparams(x), ctx.qparams(mask)
        if x_q is None or mask_q is None or not _within(x_q, out_q):
            continue
        if mask_q.tensor_scale > 2 ** (LEFT_SHIFT[out_q.dtype] - 1 - _X_BITS) * x_q.tensor_scale:
            return x, mask
    return None


def _mask_steps(ctx: LoweringContext, node: fx.Node, mask: fx.Node, out_q: QParams) -> str:
    """int32 ``(mask - zp) * ratio`` in output steps. Codes further than ``reach`` from the
    zero point saturate the output whatever ``x`` is; they are CLAMPed to it when RESCALE
    could not scale them (TOSA: ``|value| < 2**(shift - 1)``)."""
    q = ctx.qparams(mask)
    full = out_q.qmax - out_q.qmin + 1
    ratio = min(q.tensor_scale / out_q.tensor_scale, full)  # past ``full`` all saturate alike
    reach = math.ceil(full / ratio)
    low, high = DTYPE_RANGES[q.dtype]
    source = ranked(ctx, node, mask)
    if max(q.zero_point - low, high - q.zero_point) >= 2 ** (encode_scale(ratio)[1] - 1):
        clamped = ctx.temp(node, "mask_reach", ctx.graph.tensors[source].shape, q.dtype)
        bounds = max(low, q.zero_point - reach), min(high, q.zero_point + reach)
        ctx.emit("CLAMP", [source], [clamped], node, min_val=bounds[0], max_val=bounds[1],
                 nan_mode="PROPAGATE")  # fmt: skip
        source = clamped
    return emit.rescale(
        ctx, node, source, [ratio], in_zp=q.zero_point, out_zp=0, out_dtype="int32",
        suffix="mask_steps",
    )  # fmt: skip


def emit_masked(ctx: LoweringContext, node: fx.Node, op: str, x: fx.Node, mask: fx.Node):
    """``op`` (ADD or SUB) of ``x`` and a coarse ``mask`` into ``node``'s output."""
    out_q = ctx.qparams(node)
    steps = _mask_steps(ctx, node, mask, out_q)
    total = ctx.temp(node, "int32", tosa_shape(node), "int32")
    scores = widen(ctx, node, x, ctx.qparams(x).tensor_scale / out_q.tensor_scale, "in0")
    ctx.emit(op, [scores, steps], [total], node)
    if out_q.qmin == DTYPE_RANGES[out_q.dtype][0]:
        narrow(ctx, node, total, out_q.tensor_scale)
        return
    # int16 in [-32767, 32767]: a saturated sum must be -32767 as in torch, not RESCALE's -32768.
    wide = emit.rescale(
        ctx, node, total, [1.0], in_zp=0, out_zp=out_q.zero_point, out_dtype=out_q.dtype,
        suffix="saturated",
    )  # fmt: skip
    ctx.emit("CLAMP", [wide], [ctx.define(node)], node, min_val=out_q.qmin, max_val=out_q.qmax,
             nan_mode="PROPAGATE")  # fmt: skip
