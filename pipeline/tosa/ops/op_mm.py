"""aten.mm / aten.addmm (``x @ W`` as torch.export keeps it when ``x`` is 2-D).

With a constant second operand ``W`` [in, out] the product is a linear layer and is lowered
like one (``emit.conv.weighted_product``, as op_linear.py): RESHAPE to [rows, 1, 1, in] ->
1x1 CONV2D -> RESCALE -> RESHAPE, Vela's fully-connected path. ``W`` is linear's weight transposed, quantized per channel along
its axis 1 (the output features); addmm's bias becomes the convolution's bias. addmm computes
``beta * bias + alpha * (x @ W)``: only alpha = beta = 1 is a plain linear layer; the
normalisation writes every other addmm out (``pipeline/normalise/rewrites.py``).
Two activations are an activation product, lowered by op_matmul.py as MATMUL.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.context import LoweringContext
from pipeline.tosa.emit.conv import weighted_product
from pipeline.tosa.ops.op_matmul import visit_matmul
from pipeline.quant.rules import BINARY, weight_product
from pipeline.tosa.registry import Operator, lowers


@lowers("aten.mm.default", "aten.addmm.default")
def visit_mm(node: fx.Node, ctx: LoweringContext) -> None:
    bias, (x, weight) = None, node.args[:2]
    if str(node.target) == "aten.addmm.default":
        bias, x, weight = node.args[:3]
        for name in ("beta", "alpha"):
            if node.kwargs.get(name, 1) != 1:
                raise ctx.unsupported(node, f"{name}={node.kwargs[name]}", "alpha=1, beta=1")
    if ctx.const_value(weight) is not None:
        weighted_product(node, ctx, x, weight, bias)
        return
    if bias is not None:
        raise ctx.unsupported(node, "a non-constant second operand", "constant weights")
    visit_matmul(node, ctx)


OPERATOR = Operator(
    "mm / addmm -> MATMUL, or the linear lowering when the second operand is a parameter",
    quant={"aten.mm.default": (weight_product(), BINARY),
           "aten.addmm.default": weight_product(x=1, weight=2, bias=0)},
)
