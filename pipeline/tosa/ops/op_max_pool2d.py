"""aten.max_pool2d.default -> MAX_POOL2D (integer max needs no rescale: same qparams)."""

from __future__ import annotations

from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.context import LoweringContext, torch_shape
from pipeline.tosa.pooling import pool_geometry, pool_input
from pipeline.tosa.registry import lowers


@lowers("aten.max_pool2d.default")
def visit_max_pool2d(node: fx.Node, ctx: LoweringContext) -> None:
    args = list(node.args) + [None] * (6 - len(node.args))
    x, kernel, stride, padding, dilation, ceil_mode = args[:6]
    if dilation not in (None, 1, [1, 1], (1, 1)) or ceil_mode:
        raise ctx.unsupported(
            node, f"dilation={dilation}, ceil_mode={ceil_mode}", "dilation=1 and ceil_mode=False"
        )
    attrs, crop = pool_geometry(torch_shape(x)[2:], kernel, stride or kernel, padding or 0)
    source, x_q = pool_input(ctx, node, crop), ctx.qparams(x)
    if x_q is None:
        ctx.emit("MAX_POOL2D", [source], [ctx.define(node)], node, nan_mode="PROPAGATE", **attrs)
        return
    pooled = emit.int_output(ctx, node, x_q)
    ctx.emit("MAX_POOL2D", [source], [pooled], node, nan_mode="PROPAGATE", **attrs)
    emit.finish_int(ctx, node, pooled, x_q)
