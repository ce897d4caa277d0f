"""aten.argmax / argmin -> ARGMAX (of the negated values for argmin), int32 indices.

The integer codes order like the values (quantization is monotonic), so the index of the
largest code is the index torch finds in its quantized graph, ties included: both take the
first. argmin of int8 / int16 codes is ARGMAX of ``-1 - code`` (exact in the type: the order
reversed, no overflow). ``dim=None`` searches the flattened tensor.
"""

from __future__ import annotations

import numpy as np
from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import COVERAGE
from pipeline.tosa.registry import Operator, U55_U65, lowers
from pipeline.fx import target_name


@lowers("aten.argmax.default", "aten.argmin.default")
def visit_argmax(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    shape, dtype = torch_shape(x), ctx.dtype(x)
    if dtype not in ("int8", "int16", "fp32", "fp16", "bf16"):
        raise ctx.unsupported(node, f"a {dtype} input", "int8, int16 or float input")
    source = ctx.tensor(x)
    if dim is None:  # the flattened tensor
        source = emit.relayout(ctx, node, source, dim_order(x), (int(np.prod(shape)),), (0,))
        order, axis_dim = (0,), 0
    else:
        order, axis_dim = dim_order(x), int(dim) % len(shape)
    if target_name(node.target) == "aten.argmin.default":
        source = _reversed_order(ctx, node, source, dtype)
    axis = list(order).index(axis_dim)
    in_shape = ctx.graph.tensors[source].shape
    out_shape = [s for i, s in enumerate(in_shape) if i != axis]
    found = ctx.temp(node, "index", out_shape, "int32")
    ctx.emit("ARGMAX", [source], [found], node, axis=axis, nan_mode="PROPAGATE")
    kept_order = [d if d < axis_dim else d - 1 for d in order if d != axis_dim]
    emit.relayout(ctx, node, found, kept_order, torch_shape(node), dim_order(node), True)


def _reversed_order(ctx: LoweringContext, node: fx.Node, source: str, dtype: str) -> str:
    """Values whose order is the reverse of ``source``'s: ``-1 - x`` for integer codes (exact,
    in range), ``-x`` for floats."""
    shape = ctx.graph.tensors[source].shape
    if dtype.startswith(("fp", "bf")):
        out = ctx.temp(node, "negated", shape, dtype)
        zero_points = [ctx.zero_point(f"{node.name}_{side}_zp", 0, dtype) for side in ("in", "out")]
        ctx.emit("NEGATE", [source, *zero_points], [out], node)
        return out
    out = ctx.temp(node, "reversed", shape, dtype)
    ctx.emit("BITWISE_NOT", [source], [out], node)  # ~x == -1 - x in two's complement
    return out


def u55_argmax(op) -> tuple[str, str] | None:
    """Vela 5.2 runs ARGMAX on Ethos-U55/U65 of int8 values along the innermost (channel)
    axis only ('Non-passthrough operation (ArgMax)' otherwise, measured)."""
    if op.inputs[0].dtype != "int8":
        return "take int8 values", op.inputs[0].dtype
    if op.attrs.get("axis") != len(op.inputs[0].shape) - 1:
        return (
            "search the innermost axis",
            f"axis {op.attrs.get('axis')} of rank {len(op.inputs[0].shape)}",
        )
    return None


OPERATOR = Operator(
    "argmax / argmin -> ARGMAX (of the negated values for argmin), int32 indices",
    quant=COVERAGE,
    npu={U55_U65: {"ARGMAX": u55_argmax}},
)
