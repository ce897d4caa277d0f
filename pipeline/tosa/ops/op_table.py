"""Unary element-wise operators on int8/int16 (gelu, sigmoid, tanh, hardswish, silu, exp,
reciprocal, rsqrt, sqrt, abs, neg, ...) -> TABLE.

An int8 input has 256 possible values, so the whole function is a 256-entry lookup table:
entry ``i`` is what torch's q/dq graph computes for the input ``i - 128`` - dequantize in
float32, the node's own aten op with its own arguments, quantize with the output's qparams.
Built with torch's own kernels, the table matches the reference bit for bit, and Vela runs
an int8 TABLE on the NPU (fused into the producing operation where it can).

int16 uses TOSA's interpolated form: 513 int16 entries, one per 128 input steps, and an int32
result ``(table[i] << 7) + (table[i + 1] - table[i]) * fraction``, so a RESCALE by 1/128
brings it back to the output's int16 qparams. The interpolation is exact at every 128th
input and otherwise off by a fraction of an LSB for smooth functions (steep ones - sqrt or
reciprocal near 0 - are off by more, which verification reports).

A float program (FP profile) has no table: each function is written out in TOSA FP operators
(SIGMOID, ERF, TANH, EXP, ...) by ``pipeline/tosa/fp_emit.py``.
"""

from __future__ import annotations

import torch
from torch import fx

from pipeline.tosa import emit
from pipeline.tosa.context import LoweringContext
from pipeline.tosa.fp_emit import emit_float_unary
from pipeline.tosa.registry import lowers

TABLE_TARGETS = (
    "aten.gelu.default",
    "aten.sigmoid.default",
    "aten.tanh.default",
    "aten.hardswish.default",
    "aten.hardsigmoid.default",
    "aten.silu.default",
    "aten.elu.default",
    "aten.leaky_relu.default",
    "aten.exp.default",
    "aten.reciprocal.default",
    "aten.rsqrt.default",
    "aten.sqrt.default",
    "aten.log.default",
    "aten.erf.default",
    "aten.abs.default",
    "aten.neg.default",
    "aten.mish.default",
    "aten.softplus.default",
)


def int8_table(node: fx.Node, x_q, out_q) -> list[int]:
    """The 256 int8 outputs of ``node`` for the int8 inputs -128..127."""
    decomposed = torch.ops.quantized_decomposed
    inputs = torch.arange(-128, 128, dtype=torch.int8)
    real = decomposed.dequantize_per_tensor(
        inputs, x_q.tensor_scale, x_q.zero_point, x_q.qmin, x_q.qmax, torch.int8
    )
    outputs = node.target(real, *node.args[1:], **node.kwargs)
    quantized = decomposed.quantize_per_tensor(
        outputs, out_q.tensor_scale, out_q.zero_point, out_q.qmin, out_q.qmax, torch.int8
    )
    return quantized.tolist()


def int16_table(node: fx.Node, x_q, out_q) -> list[int]:
    """The 513 int16 entries of ``node`` at the int16 inputs -32768, -32640, ..., 32768."""
    steps = torch.arange(-32768, 32769, 128, dtype=torch.int32)
    real = (steps.to(torch.float32) - x_q.zero_point) * x_q.tensor_scale
    outputs = node.target(real, *node.args[1:], **node.kwargs)
    quantized = torch.round(outputs.double() / out_q.tensor_scale) + out_q.zero_point
    return quantized.clamp(out_q.qmin, out_q.qmax).to(torch.int64).tolist()


def _int16(node: fx.Node, ctx: LoweringContext, x_q, out_q) -> None:
    table = ctx.const(f"{node.name}_table", int16_table(node, x_q, out_q), "int16")
    shape = ctx.graph.tensors[ctx.tensor(node.args[0])].shape
    wide = ctx.temp(node, "interpolated", shape, "int32")
    ctx.emit("TABLE", [ctx.tensor(node.args[0]), table], [wide], node)
    emit.rescale(
        ctx, node, wide, [1 / 128], in_zp=0, out_zp=0, out_dtype="int16", out=ctx.define(node)
    )


@lowers(*TABLE_TARGETS)
def visit_table(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    x_q, out_q = ctx.qparams(x), ctx.qparams(node)
    if x_q is None and out_q is None:  # FP profile: the function in float operators
        emit_float_unary(node, ctx)
        return
    types = (x_q.dtype if x_q else "float", out_q.dtype if out_q else "float")
    if types == ("int16", "int16"):
        _int16(node, ctx, x_q, out_q)
        return
    if types != ("int8", "int8"):
        got = " -> ".join(types)
        raise ctx.unsupported(node, f"types {got}", "int8 -> int8 or int16 -> int16 (TABLE)")
    table = ctx.const(f"{node.name}_table", int8_table(node, x_q, out_q), "int8")
    ctx.emit("TABLE", [ctx.tensor(x), table], [ctx.define(node)], node)
