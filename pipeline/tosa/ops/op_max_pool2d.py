"""aten.max_pool2d.default -> MAX_POOL2D (integer max needs no rescale: same qparams).

``ceil_mode`` only adds bottom/right padding, which MAX_POOL2D never picks.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, torch_shape
from pipeline.tosa.emit.pooling import pool_geometry, pool_input
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers


@lowers("aten.max_pool2d.default")
def visit_max_pool2d(node: fx.Node, ctx: LoweringContext) -> None:
    args = list(node.args) + [None] * (5 - len(node.args))
    x, kernel, stride, padding, dilation = args[:5]  # ceil_mode: torch's output size says it
    if dilation not in (None, 1, [1, 1], (1, 1)):
        raise ctx.unsupported(node, f"dilation={dilation}", "dilation=1")
    attrs, crop = pool_geometry(
        torch_shape(x)[2:], kernel, stride or kernel, padding or 0, torch_shape(node)[2:]
    )
    source, x_q = pool_input(ctx, node, crop), ctx.qparams(x)
    if x_q is None:
        ctx.emit("MAX_POOL2D", [source], [ctx.define(node)], node, nan_mode="PROPAGATE", **attrs)
        return
    pooled = emit.int_output(ctx, node, x_q)
    ctx.emit("MAX_POOL2D", [source], [pooled], node, nan_mode="PROPAGATE", **attrs)
    emit.finish_int(ctx, node, pooled, x_q)


OPERATOR = Operator(
    "max_pool2d -> MAX_POOL2D (no rescale: same qparams)",
    quant=SHARED,
)
