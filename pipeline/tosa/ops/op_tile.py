"""aten.expand / aten.repeat -> TILE (a RESHAPE first when the output has more dims).

Both are "the input copied along some dims": torch aligns the input's dims with the output's
trailing ones (an expanded size-1 dim, or leading dims ``repeat`` adds), so the input is
reshaped to the output's rank and tiled by ``output size / input size`` per dim. Expands of
constants (a class token, position ids) are folded by normalisation; this lowers the ones
of computed values (``mask[:, None, None, :].expand(b, 1, t, t)``). The values are moved
only, so the output shares the input's quantization.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.emit.elementwise import ranked
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers


@lowers("aten.expand.default", "aten.repeat.default")
def visit_tile(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    if ctx.qparams(x) is not None and not emit.same_quantization(ctx.qparams(x), ctx.qparams(node)):
        raise ctx.unsupported(node, "input and output quantized differently", "shared qparams")
    source = ranked(ctx, node, x)
    have, want = ctx.graph.tensors[source].shape, tosa_shape(node)
    multiples = [w // h for h, w in zip(have, want)]
    if all(m == 1 for m in multiples):
        ctx.tensors[node] = source
        return
    shape = ctx.const(f"{node.name}_multiples", multiples, "shape")
    ctx.emit("TILE", [source, shape], [ctx.define(node)], node)


OPERATOR = Operator(
    "expand / repeat -> TILE (a RESHAPE first when the output has more dims)",
    quant=SHARED,
)
