"""aten.pad / constant_pad_nd (constant mode) -> PAD.

Most pads never get here: ``fold_pad_pass`` moves zero pads in front of a conv2d into the
conv's own padding. The pad value is quantized with the output's qparams (= the input's, the
quantizer shares them), so a 0.0 pad is the zero point.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers


def _arguments(node: fx.Node) -> tuple[list[int], str, float]:
    args = list(node.args) + [None] * (4 - len(node.args))
    if str(node.target) == "aten.constant_pad_nd.default":
        return list(args[1]), "constant", float(args[2] or 0.0)
    return list(args[1]), args[2] or "constant", float(args[3] or 0.0)


def torch_pads(pads: list[int], rank: int) -> list[tuple[int, int]]:
    """torch's (last dim first) pad list as (before, after) per torch dim."""
    per_dim = [(0, 0)] * rank
    for i in range(len(pads) // 2):
        per_dim[rank - 1 - i] = (int(pads[2 * i]), int(pads[2 * i + 1]))
    return per_dim


@lowers("aten.pad.default", "aten.constant_pad_nd.default")
def visit_pad(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    pads, mode, value = _arguments(node)
    if mode != "constant":
        raise ctx.unsupported(node, f"mode={mode!r}", "mode='constant'")
    per_dim = torch_pads(pads, len(torch_shape(x)))
    if any(before < 0 or after < 0 for before, after in per_dim):
        raise ctx.unsupported(node, f"negative pads {pads}", "pads >= 0")
    flat = [v for d in dim_order(node) for v in per_dim[d]]
    out_q, dtype = ctx.qparams(node), ctx.dtype(node)
    pad_value = out_q.quantize(value) if out_q is not None else value
    inputs = [
        ctx.tensor(x),
        ctx.const(f"{node.name}_padding", flat, "shape"),
        ctx.const(f"{node.name}_pad_const", [pad_value], dtype),
    ]
    ctx.emit("PAD", inputs, [ctx.define(node)], node)


OPERATOR = Operator(
    "pad / constant_pad_nd (constant mode) -> PAD",
    quant=SHARED,
)
