"""aten.amax / aten.amin -> REDUCE_MAX / REDUCE_MIN per reduced dim (the integer max or min
keeps the input's quantization). ``max(x, dim)`` / ``min(x, dim)`` whose indices nothing
reads arrive here as amax / amin (``pipeline/normalise/rewrites.py``).

TOSA reduces one axis at a time and keeps it as size 1 (``keepdim=True``); without keepdim a
RESHAPE drops the reduced dims.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, U55_U65, lowers
from pipeline.fx import target_name

REDUCTIONS = {"aten.amax.default": "REDUCE_MAX", "aten.amin.default": "REDUCE_MIN"}


@lowers(*REDUCTIONS)
def visit_amax(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    rank = len(torch_shape(x))
    dims = node.args[1] if len(node.args) > 1 else list(range(rank))
    x_q = ctx.qparams(x)
    if x_q is not None and not emit.same_quantization(x_q, ctx.qparams(node)):
        raise ctx.unsupported(node, "input and output quantized differently", "shared qparams")
    current = ctx.tensor(x)
    kept = list(torch_shape(x))
    for dim in sorted({int(d) % rank for d in dims}):
        axis = list(dim_order(x)).index(dim)
        shape = list(ctx.graph.tensors[current].shape)
        shape[axis] = 1
        kept[dim] = 1
        reduced = ctx.temp(node, "max", shape, ctx.graph.tensors[current].dtype)
        op = REDUCTIONS[target_name(node.target)]
        ctx.emit(op, [current], [reduced], node, axis=axis, nan_mode="PROPAGATE")
        current = reduced
    # To the node's own shape: drops the reduced dims unless keepdim.
    emit.relayout(ctx, node, current, dim_order(x), torch_shape(node), dim_order(node), True)


def u55_int8_int16_values(op) -> tuple[str, str] | None:
    """Vela 5.2 reduces int8 and int16 values only on Ethos-U55/U65."""
    if op.inputs[0].dtype not in ("int8", "int16"):
        return "take int8 or int16 values", op.inputs[0].dtype
    return None


OPERATOR = Operator(
    "amax / amin -> REDUCE_MAX / REDUCE_MIN per reduced dim",
    quant=SHARED,
    npu={U55_U65: {"REDUCE_MAX": u55_int8_int16_values, "REDUCE_MIN": u55_int8_int16_values}},
)
