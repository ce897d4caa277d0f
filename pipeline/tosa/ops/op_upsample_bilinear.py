"""aten.upsample_bilinear2d -> RESIZE (BILINEAR) (+ RESCALE for integer graphs).

torch (align_corners=False, an integer factor ``k``) samples input row
``(y + 0.5) / k - 0.5``, clamped at 0, between rows ``floor`` and ``floor + 1`` (clamped to
the last row). TOSA BILINEAR samples ``(y * d + offset) / n`` and clamps both neighbours
to the image; ``n = 2k, d = 2, offset = 1 - k`` (the nearest upsample's parameters,
``resize_parameters``) is exactly torch's source row, and clamping a row of -1 to 0 gives
torch's clamp at 0.

Integer RESIZE BILINEAR weights the four neighbours by ``(n_y - dy)``/``dy`` times
``(n_x - dx)``/``dx``: its int32 (int8 input) or int48 (int16 input) output is the
interpolated integer value times ``n_y * n_x``, zero point included (weights sum to
``n_y * n_x``). Input and output share qparams (the quantizer annotates the op as shared),
so one RESCALE by ``1 / (n_y * n_x)`` with zero points 0 gives the output directly; it rounds
half up where torch rounds the float result half to even (ties: +-1, verify's tolerance).
The RESCALE keeps the usual 31-bit multiplier encoding: TOSA's apply_scale_32 requires
``|value| < 2**(shift - 1)``, so "multiplier 1, shift log2(n_y * n_x)" is not valid TOSA for
int32 accumulators.
Other ratios and align_corners=True (source row ``y * (in - 1) / (out - 1)``) take the
parameters of ``op_upsample.axis_parameters``; the integer arithmetic is the same.

Vela 5.2 compiles this pair to one NPU operation on Ethos-U85. On Ethos-U55/U65 it rejects a
BILINEAR RESIZE in every encoding tried (offset/border forms, RESCALE multiplier/shift and
rounding variants, int8 and int16). The U55/U65 variant of the graph therefore has the
RESIZE of factors 2, 4 and 8 rewritten as NEAREST RESIZE + depthwise filter with the same
integer result (``passes/split_bilinear_resize_pass.py``; 1.4-6.7x the cycles of this form
on Ethos-U85, so only there); other factors ``pipeline/ethosu/placement.py`` reports before Vela runs.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.ops.op_upsample import resize_inputs
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers

ACCUMULATOR = {"int8": "int32", "int16": "int48"}


@lowers("aten.upsample_bilinear2d.vec", "aten.upsample_bilinear2d.default")
def visit_upsample_bilinear2d(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    x_q, out_q = ctx.qparams(x), ctx.qparams(node)
    if x_q is not None and x_q.dtype not in ACCUMULATOR:
        raise ctx.unsupported(node, f"{x_q.dtype} input", "int8 or int16 input")
    inputs, weight_sum = resize_inputs(node, ctx, nearest=False)
    if x_q is None:  # FP profile: the interpolation itself
        ctx.emit("RESIZE", inputs, [ctx.define(node)], node, mode="BILINEAR")
        return
    wide = ctx.temp(node, "weighted", tosa_shape(node), ACCUMULATOR[x_q.dtype])
    ctx.emit("RESIZE", inputs, [wide], node, mode="BILINEAR")
    emit.rescale(
        ctx,
        node,
        wide,
        [1.0 / weight_sum],
        in_zp=0,
        out_zp=0,
        out_dtype=out_q.dtype,
        out=ctx.define(node),
    )


OPERATOR = Operator(
    "upsample_bilinear2d -> RESIZE (BILINEAR) (+ RESCALE for integer graphs)",
    quant=SHARED,
    measured_by=("upsample/bilinear x2",),
)
