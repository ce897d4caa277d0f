"""aten.cat -> CONCAT (inputs whose quantization differs from the output's RESCALEd first).

The quantizer shares one quantization between all inputs and the output of a cat, so usually
every input is already in the output's qparams and the CONCAT only moves data.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import shared_inputs
from pipeline.tosa.registry import Operator, lowers


@lowers("aten.cat.default")
def visit_cat(node: fx.Node, ctx: LoweringContext) -> None:
    tensors = [t for t in node.args[0] if torch_shape(t) and 0 not in torch_shape(t)]
    rank = len(torch_shape(node))
    dim = int(node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)) % rank
    out_q = ctx.qparams(node)
    inputs = []
    for tensor in tensors:
        if dim_order(tensor) != dim_order(node):
            raise ctx.unsupported(node, "inputs of another rank", "inputs of the output's rank")
        source, q = ctx.tensor(tensor), ctx.qparams(tensor)
        if out_q is not None and not emit.same_quantization(q, out_q):
            if q is None:
                raise ctx.unsupported(
                    node, "a float input in a quantized graph", "all inputs quantized"
                )
            source = emit.requantize(ctx, node, source, q, out_q)
        inputs.append(source)
    ctx.emit("CONCAT", inputs, [ctx.define(node)], node, axis=dim_order(node).index(dim))


OPERATOR = Operator(
    "cat -> CONCAT (inputs quantized otherwise RESCALEd first)",
    quant=shared_inputs(0),
)
