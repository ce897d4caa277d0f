"""aten.avg_pool2d / adaptive_avg_pool2d -> AVG_POOL2D.

TOSA divides by the number of *valid* (unpadded) elements, so padded avg_pool2d is only
exact with ``count_include_pad=False``. Adaptive pooling is lowered when the output size
divides the input (kernel = stride = input / output), which covers global pooling.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.context import LoweringContext, torch_shape
from pipeline.tosa.pooling import pool_geometry, pool_input
from pipeline.tosa.registry import lowers


def _emit(ctx: LoweringContext, node: fx.Node, kernel, stride, padding) -> None:
    x = node.args[0]
    attrs, crop = pool_geometry(torch_shape(x)[2:], kernel, stride, padding)
    x_q = ctx.qparams(x)
    dtype, zp = (x_q.dtype, x_q.zero_point) if x_q else (ctx.dtype(x), 0)
    pooled = emit.int_output(ctx, node, x_q) if x_q else ctx.define(node)
    inputs = [
        pool_input(ctx, node, crop),
        ctx.zero_point(f"{node.name}_input_zp", zp, dtype),
        ctx.zero_point(f"{node.name}_output_zp", zp, dtype),
    ]
    ctx.emit("AVG_POOL2D", inputs, [pooled], node, acc_type="int32" if x_q else "fp32", **attrs)
    if x_q is not None:
        emit.finish_int(ctx, node, pooled, x_q)


@lowers("aten.avg_pool2d.default")
def visit_avg_pool2d(node: fx.Node, ctx: LoweringContext) -> None:
    args = list(node.args) + [None] * (7 - len(node.args))
    kernel, stride, padding, ceil_mode, include_pad, divisor = args[1:7]
    padding = padding or 0
    if ceil_mode or divisor is not None:
        raise ctx.unsupported(
            node,
            f"ceil_mode={ceil_mode}, divisor_override={divisor}",
            "ceil_mode=False, no divisor_override",
        )
    if padding not in (0, [0, 0], (0, 0)) and include_pad in (None, True):
        raise ctx.unsupported(
            node, "padding and count_include_pad=True", "no padding, or count_include_pad=False"
        )
    _emit(ctx, node, kernel, stride or kernel, padding)


@lowers("aten.adaptive_avg_pool2d.default")
def visit_adaptive_avg_pool2d(node: fx.Node, ctx: LoweringContext) -> None:
    in_hw, out_hw = torch_shape(node.args[0])[2:], torch_shape(node)[2:]
    if any(i % o for i, o in zip(in_hw, out_hw)):
        raise ctx.unsupported(
            node,
            f"output {tuple(out_hw)} not dividing input {tuple(in_hw)}",
            "output sizes that divide the input",
        )
    kernel = [i // o for i, o in zip(in_hw, out_hw)]
    _emit(ctx, node, kernel, kernel, 0)
