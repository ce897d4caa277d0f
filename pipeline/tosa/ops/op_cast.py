"""aten._to_copy (``.to(dtype)``, ``.bool()``, ``.float()``) between bool, integer and float
-> CAST, or CAST + RESCALE into a quantized float.

int64 is int32 in the graph, so int64 <-> int32 casts are no-ops. An integer or bool tensor
turned float (``attention_mask.to(torch.float32)``) gets its quantization from the operator
that reads it: the int32 value is RESCALEd by ``1 / scale`` onto the zero point, which is
torch's ``quantize(float(x))``. A quantized float turned bool is ``x != 0``: its code
compared with the zero point (a float with 0.0). Float to integer (torch truncates toward
zero) is not lowered.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.context import LoweringContext, tosa_shape
from pipeline.tosa.elementwise import scalar_const
from pipeline.tosa.registry import lowers

_FLOATS = ("fp32", "fp16", "bf16")


def _to_quantized(ctx: LoweringContext, node: fx.Node, source: str) -> None:
    out_q = ctx.qparams(node)
    if ctx.graph.tensors[source].dtype == "bool":
        source = emit.cast(ctx, node, source, "int32")
    emit.rescale(
        ctx, node, source, [1.0 / out_q.tensor_scale], in_zp=0, out_zp=out_q.zero_point,
        out_dtype=out_q.dtype, out=ctx.define(node),
    )  # fmt: skip


def _to_bool(ctx: LoweringContext, node: fx.Node, x: fx.Node, source: str) -> None:
    """``x != 0`` of a float: a quantized code differs from the zero point."""
    q = ctx.qparams(x)
    if q is None:
        zero = scalar_const(ctx, node, 0.0, "fp32")
    else:
        source = emit.cast(ctx, node, source, "int32")
        zero = scalar_const(ctx, node, q.zero_point, "int32")
    equal = ctx.temp(node, "is_zero", tosa_shape(node), "bool")
    ctx.emit("EQUAL", [source, zero], [equal], node)
    ctx.emit("LOGICAL_NOT", [equal], [ctx.define(node)], node)


@lowers("aten._to_copy.default")
def visit_to_copy(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    source, x_q, out_q = ctx.tensor(x), ctx.qparams(x), ctx.qparams(node)
    have, want = ctx.graph.tensors[source].dtype, ctx.dtype(node)
    if out_q is not None and x_q is None:
        _to_quantized(ctx, node, source)
    elif out_q is not None and emit.same_quantization(x_q, out_q):  # float -> float
        ctx.tensors[node] = source
    elif out_q is not None:
        emit.requantize(ctx, node, source, x_q, out_q, out=ctx.define(node))
    elif want == "bool" and (x_q is not None or have in _FLOATS):
        _to_bool(ctx, node, x, source)
    elif x_q is not None or (have in _FLOATS and want not in _FLOATS):
        raise ctx.unsupported(
            node, f"a {have} -> {want} conversion", "bool/integer -> bool/integer/float"
        )
    elif have == want:
        ctx.tensors[node] = source
    else:
        emit.cast(ctx, node, source, want, out=ctx.define(node))
