"""aten.add.Tensor -> ADD (int: RESCALE both inputs to a common int32 scale, ADD, RESCALE out)."""

from __future__ import annotations

from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.registry import lowers

# Inputs are widened to int32 and shifted left so the two input scales can be matched with
# little rounding error: 20 bits for int8 (|x - zp| <= 255 stays below 2**28), 15 for int16
# (|x| <= 32767 stays below 2**30), the split TFLite/Ethos-U use for 8/16-bit ADD.
_LEFT_SHIFT = {"int8": 20, "int16": 15}


@lowers("aten.add.Tensor")
def visit_add(node: fx.Node, ctx: LoweringContext) -> None:
    a, b = node.args[0], node.args[1]
    if node.kwargs.get("alpha", 1) != 1:
        raise ctx.unsupported(node, f"alpha={node.kwargs['alpha']}", "alpha=1")
    if not isinstance(b, fx.Node) or not isinstance(a, fx.Node):
        raise ctx.unsupported(node, "a scalar operand", "tensor + tensor")
    if len(tosa_shape(a)) != len(tosa_shape(b)):
        raise ctx.unsupported(
            node,
            f"operands of rank {len(tosa_shape(a))} and {len(tosa_shape(b))}",
            "operands of equal rank",
        )
    out_q = ctx.qparams(node)
    if out_q is None:
        ctx.emit("ADD", [ctx.tensor(a), ctx.tensor(b)], [ctx.define(node)], node)
        return
    qa, qb = ctx.qparams(a), ctx.qparams(b)
    if qa is None or qb is None:
        raise ctx.unsupported(
            node, "a float operand in a quantized graph", "both operands quantized"
        )
    shift = _LEFT_SHIFT[out_q.dtype]
    twice_max = 2 * max(qa.tensor_scale, qb.tensor_scale)
    widened = [
        emit.rescale(
            ctx,
            node,
            ctx.tensor(x),
            [q.tensor_scale / twice_max * 2**shift],
            in_zp=q.zero_point,
            out_zp=0,
            out_dtype="int32",
            suffix=f"in{i}",
        )
        for i, (x, q) in enumerate(((a, qa), (b, qb)))
    ]
    total = ctx.temp(node, "sum", tosa_shape(node), "int32")
    ctx.emit("ADD", widened, [total], node)
    emit.rescale(
        ctx,
        node,
        total,
        [twice_max / (2**shift * out_q.tensor_scale)],
        in_zp=0,
        out_zp=out_q.zero_point,
        out_dtype=out_q.dtype,
        out=ctx.define(node),
    )
