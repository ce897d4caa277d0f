"""aten.matmul / bmm / mm of two activations -> MATMUL (+ RESCALE when quantized).

TOSA MATMUL is ``[N, H, C] x [N, C, W] -> [N, H, W]`` with int32 results (int8 inputs, zero
points as operands) or int48 (int16), in units of ``a_scale * b_scale``; one RESCALE moves it
to the output's qparams. Leading batch dims are flattened into N (batch dims that broadcast
are TILEd to the common ones first; a 1-D operand is a row or a column, as torch.matmul
reads it), and operands are first put in torch's dim order (4-D values are NHWC).
Linear layers with constant weights never come here (see op_linear.py); ``x @ W`` with a
constant [in, out] ``W`` is one too (``emit.conv.weighted_product``).
"""

from __future__ import annotations

import math

import torch
from torch import fx

from pipeline.tosa.emit import common as emit, movement
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.emit.conv import ACC_TYPES, weighted_product
from pipeline.quant.rules import BINARY, weight_product
from pipeline.tosa.registry import Operator, U55_U65, lowers


def _as_rank3(ctx: LoweringContext, node: fx.Node, x: fx.Node, rank3) -> str:
    return emit.relayout(ctx, node, ctx.tensor(x), dim_order(x), rank3, (0, 1, 2))


def _operand_shapes(shape_a, shape_b) -> tuple[tuple, tuple] | None:
    """The [N, H, C] x [N, C, W] views of torch.matmul's operands, or None when the batch
    dims differ (broadcast). A 1-D operand is a row (``v @ M``) or a column (``M @ v``, the
    batch dims of ``M`` becoming rows) as torch.matmul reads it."""
    if len(shape_b) == 1:
        return (1, math.prod(shape_a[:-1]), shape_a[-1]), (1, shape_b[0], 1)
    if len(shape_a) == 1:
        if len(shape_b) != 2:
            return None
        return (1, 1, shape_a[0]), (1, *shape_b)
    if shape_a[:-2] != shape_b[:-2]:
        return None
    return (math.prod(shape_a[:-2]), *shape_a[-2:]), (math.prod(shape_b[:-2]), *shape_b[-2:])


def _broadcast_operands(ctx: LoweringContext, node: fx.Node, a: fx.Node, b: fx.Node):
    """torch.matmul's broadcasting: a 1-D ``a`` is a row, a 1-D ``b`` a column; the batch
    dims broadcast (``[2, 3, 5] @ [5, 2]``, ``[3, 5] @ [2, 5, 3]``, ``[4, 3, 5] @ [2, 4, 5,
    3]``). Each operand is TILEd to the common batch dims and viewed as [N, rows, cols]."""
    shape_a, shape_b = torch_shape(a), torch_shape(b)
    mat_a = tuple(shape_a) if len(shape_a) > 1 else (1, shape_a[0])
    mat_b = tuple(shape_b) if len(shape_b) > 1 else (shape_b[0], 1)
    try:
        batch = tuple(torch.broadcast_shapes(mat_a[:-2], mat_b[:-2]))
    except RuntimeError as error:
        raise ctx.unsupported(node, f"operands {shape_a} and {shape_b}", str(error)) from None
    operands, views = [], []
    for x, mat in ((a, mat_a), (b, mat_b)):
        ranked = (1,) * (len(batch) - len(mat[:-2])) + mat
        src = emit.relayout(
            ctx, node, ctx.tensor(x), dim_order(x), ranked, tuple(range(len(ranked)))
        )
        tiled = movement.tile(ctx, node, src, (*batch, *mat[-2:]))
        view = (math.prod(batch), *mat[-2:])
        operands.append(movement.reshape(ctx, node, tiled, view))
        views.append(view)
    return operands, views


@lowers("aten.matmul.default", "aten.bmm.default")
def visit_matmul(node: fx.Node, ctx: LoweringContext) -> None:
    a, b = node.args[0], node.args[1]
    shape_a, shape_b = torch_shape(a), torch_shape(b)
    if ctx.const_value(b) is not None and len(shape_b) == 2:
        weighted_product(node, ctx, a, b, None)
        return
    views = _operand_shapes(shape_a, shape_b)
    if views is None:  # batch dims broadcast: each operand TILEd up to the common ones
        operands, views = _broadcast_operands(ctx, node, a, b)
    else:
        operands = [_as_rank3(ctx, node, a, views[0]), _as_rank3(ctx, node, b, views[1])]
    qa, qb, out_q = ctx.qparams(a), ctx.qparams(b), ctx.qparams(node)
    batch, rows, cols = views[0][0], views[0][1], views[1][2]
    dtype = ACC_TYPES[qa.dtype] if qa else "fp32"
    product = ctx.temp(node, "product", (batch, rows, cols), dtype)
    zero_points = [
        ctx.zero_point(f"{node.name}_a_zp", qa.zero_point if qa else 0, ctx.dtype(a)),
        ctx.zero_point(f"{node.name}_b_zp", qb.zero_point if qb else 0, ctx.dtype(b)),
    ]
    ctx.emit("MATMUL", [*operands, *zero_points], [product], node)
    if out_q is not None:
        product = emit.rescale(
            ctx, node, product, [qa.tensor_scale * qb.tensor_scale / out_q.tensor_scale],
            in_zp=0, out_zp=out_q.zero_point, out_dtype=out_q.dtype,
        )  # fmt: skip
    emit.relayout(ctx, node, product, (0, 1, 2), torch_shape(node), dim_order(node), True)


def u55_int8_inputs(op) -> tuple[str, str] | None:
    """Vela 5.2 runs MATMUL of int8 inputs only on Ethos-U55/U65."""
    if any(t.dtype != "int8" for t in op.inputs[:2]):
        return "take int8 inputs", ", ".join(t.dtype for t in op.inputs[:2])
    return None


OPERATOR = Operator(
    "matmul / bmm of two activations -> MATMUL (+ RESCALE); x @ W of a parameter: as linear",
    quant={"aten.matmul.default": (weight_product(), BINARY), "aten.bmm.default": BINARY},
    npu={U55_U65: {"MATMUL": u55_int8_inputs}},
)
