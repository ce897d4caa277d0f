"""aten.slice.Tensor (``x[:, a:b]``, step 1) -> SLICE in the tensor's TOSA dim order.

Strided slices (``x[..., ::2]``) have no single TOSA operator and are reported.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.registry import lowers


@lowers("aten.slice.Tensor")
def visit_slice(node: fx.Node, ctx: LoweringContext) -> None:
    args = list(node.args) + [None] * (5 - len(node.args))
    x, dim, start, _, step = args[:5]
    if (step or 1) != 1:
        raise ctx.unsupported(node, f"step={step}", "step=1")
    in_shape = torch_shape(x)
    dim = int(dim or 0) % len(in_shape)
    start = int(start or 0)
    start = max(0, start + in_shape[dim] if start < 0 else min(start, in_shape[dim]))
    axis = list(dim_order(x)).index(dim)
    out = ctx.define(node)
    size = list(ctx.graph.tensors[out].shape)
    begin = [start if i == axis else 0 for i in range(len(size))]
    inputs = [
        ctx.tensor(x),
        ctx.const(f"{node.name}_start", begin, "shape"),
        ctx.const(f"{node.name}_size", size, "shape"),
    ]
    ctx.emit("SLICE", inputs, [out], node)
