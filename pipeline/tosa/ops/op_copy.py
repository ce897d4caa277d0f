"""aten.copy (what ``x[:, 1] = v`` leaves: ``copy(x[:, 1], v)``, then a slice/select_scatter)
-> ``v`` broadcast to the destination's shape: nothing, or a TILE.

The destination only gives the shape. The quantizer gives the destination, ``v`` and the
output one quantization (a ``v`` quantized otherwise is RESCALEd), so the copy moves integers.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import movement
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape, tosa_shape
from pipeline.tosa.emit.elementwise import ranked
from pipeline.quant.rules import shared_inputs
from pipeline.tosa.registry import Operator, lowers


@lowers("aten.copy.default")
def visit_copy(node: fx.Node, ctx: LoweringContext) -> None:
    src = node.args[1]
    if ctx.dtype(src) != ctx.dtype(node) and ctx.qparams(node) is None:
        raise ctx.unsupported(node, f"a {ctx.dtype(src)} source", f"a {ctx.dtype(node)} source")
    if ctx.qparams(node) is None:
        source = ranked(ctx, node, src)
    else:
        shape = (1,) * (len(torch_shape(node)) - len(torch_shape(src))) + torch_shape(src)
        source = movement.shared_values(ctx, node, src, shape, dim_order(node))
    have, want = ctx.graph.tensors[source].shape, tosa_shape(node)
    if tuple(have) == tuple(want):
        ctx.tensors[node] = source
        return
    multiples = ctx.const(f"{node.name}_multiples", [w // h for h, w in zip(have, want)], "shape")
    ctx.emit("TILE", [source, multiples], [ctx.define(node)], node)


OPERATOR = Operator(
    "copy (what x[:, 1] = v leaves) -> the values, broadcast to x's shape",
    quant=shared_inputs(0, 1),
)
