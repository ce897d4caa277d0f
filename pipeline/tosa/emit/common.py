"""Emission helpers shared by operator visitors: RESCALE, RESHAPE/TRANSPOSE between dimension
orders, and TOSA's exact-division padding rule. Each returns the name of the tensor it made."""

from __future__ import annotations

from collections.abc import Sequence

from torch import fx

from pipeline.tosa import layout
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape, tosa_shape
from pipeline.tosa.quant_math import QParams, encode_scale


def rescale(
    ctx: LoweringContext,
    node: fx.Node,
    src: str,
    scales: Sequence[float],
    *,
    in_zp: int,
    out_zp: int,
    out_dtype: str,
    out: str | None = None,
    suffix: str = "rescaled",
) -> str:
    """RESCALE ``src`` by ``scales`` (one, or one per output channel = last TOSA dim).

    int48 inputs use 16-bit multipliers: TOSA forbids scale32 with an int48 input.
    """
    source = ctx.graph.tensors[src]
    scale32 = source.dtype != "int48"
    bits = 32 if scale32 else 16
    encoded = [encode_scale(float(s), bits) for s in scales]
    if out is None:
        out = ctx.temp(node, suffix, source.shape, out_dtype)
    inputs = [
        src,
        ctx.const(f"{node.name}_multiplier", [m for m, _ in encoded], f"int{bits}"),
        ctx.const(f"{node.name}_shift", [s for _, s in encoded], "int8"),
        ctx.zero_point(f"{node.name}_input_zp", in_zp, source.dtype),
        ctx.zero_point(f"{node.name}_output_zp", out_zp, out_dtype),
    ]
    ctx.emit(
        "RESCALE",
        inputs,
        [out],
        node,
        scale32=scale32,
        rounding_mode=ctx.spec.rounding_mode,
        per_channel=len(encoded) > 1,
        input_unsigned=False,
        output_unsigned=False,
    )
    return out


def requantize(
    ctx: LoweringContext,
    node: fx.Node,
    src: str,
    source: QParams,
    target: QParams,
    out: str | None = None,
) -> str:
    """Move an integer tensor from ``source`` to ``target`` quantization (one RESCALE)."""
    return rescale(
        ctx,
        node,
        src,
        [source.tensor_scale / target.tensor_scale],
        in_zp=source.zero_point,
        out_zp=target.zero_point,
        out_dtype=target.dtype,
        out=out,
        suffix="requantized",
    )


def same_quantization(a: QParams | None, b: QParams | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.dtype, a.zero_point, a.scale) == (b.dtype, b.zero_point, b.scale)


def int_output(ctx: LoweringContext, node: fx.Node, produced: QParams) -> str:
    """Where an op whose integer results are in ``produced`` quantization (MAX_POOL2D keeps
    its input's) writes: the node's own output if the node has that quantization, else a
    temporary that ``finish_int`` requantizes."""
    if same_quantization(produced, ctx.qparams(node)):
        return ctx.define(node, produced.dtype)
    return ctx.temp(node, "unscaled", tosa_shape(node), produced.dtype)


def finish_int(ctx: LoweringContext, node: fx.Node, result: str, produced: QParams) -> None:
    """Complete ``int_output``: RESCALE ``result`` into the node's output if it is not it."""
    if ctx.tensors.get(node) != result:
        requantize(ctx, node, result, produced, ctx.qparams(node), out=ctx.define(node))


def cast(ctx: LoweringContext, node: fx.Node, src: str, dtype: str, out: str | None = None) -> str:
    """CAST ``src`` to ``dtype`` (bool <-> integer, integer widening; no rescaling)."""
    out = out or ctx.temp(node, f"as_{dtype}", ctx.graph.tensors[src].shape, dtype)
    ctx.emit("CAST", [src], [out], node)
    return out


def transpose(
    ctx: LoweringContext, node: fx.Node, src: str, perm: Sequence[int], out: str | None = None
) -> str:
    source = ctx.graph.tensors[src]
    shape = layout.permute(source.shape, perm)
    out = out or ctx.temp(node, "transposed", shape, source.dtype)
    ctx.emit("TRANSPOSE", [src], [out], node, perms=list(perm))
    return out


def reshape(
    ctx: LoweringContext, node: fx.Node, src: str, shape: Sequence[int], out: str | None = None
) -> str:
    source = ctx.graph.tensors[src]
    out = out or ctx.temp(node, "reshaped", shape, source.dtype)
    shape_const = ctx.const(f"{node.name}_shape", list(shape), "shape")
    ctx.emit("RESHAPE", [src, shape_const], [out], node)
    return out


def _relayout_steps(src_shape, src_order, dst_torch_shape, dst_order) -> list:
    """[("transpose", perm) | ("reshape", shape)] taking a tensor from one layout to another."""
    steps, shape = [], tuple(src_shape)
    if tuple(src_order) == tuple(dst_order) and layout.permute(dst_torch_shape, dst_order) == shape:
        return steps  # already there (e.g. a keepdim reduction of an NHWC tensor)
    to_torch = layout.inverse(src_order)
    if not layout.moves_only_unit_dims(shape, to_torch):
        steps.append(("transpose", to_torch))
        shape = layout.permute(shape, to_torch)
    direct = layout.moves_only_unit_dims(dst_torch_shape, dst_order)
    mid_shape = layout.permute(dst_torch_shape, dst_order) if direct else tuple(dst_torch_shape)
    if shape != tuple(mid_shape):
        steps.append(("reshape", tuple(mid_shape)))
    if not direct:
        steps.append(("transpose", tuple(dst_order)))
    return steps


def relayout(
    ctx: LoweringContext,
    node: fx.Node,
    src: str,
    src_order: Sequence[int],
    dst_torch_shape: Sequence[int],
    dst_order: Sequence[int],
    define: bool = False,
) -> str:
    """Reshape ``src`` (TOSA tensor in ``src_order``) to torch shape ``dst_torch_shape``
    stored in ``dst_order``. TRANSPOSE only when a permutation moves data; otherwise the
    whole change is one RESHAPE (or nothing). ``define``: the result is ``node``'s output."""
    steps = _relayout_steps(ctx.graph.tensors[src].shape, src_order, dst_torch_shape, dst_order)
    current = src
    for i, (kind, value) in enumerate(steps):
        last = define and i == len(steps) - 1
        shape = (
            layout.permute(ctx.graph.tensors[current].shape, value)
            if kind == "transpose"
            else value
        )
        out = ctx.define(node, ctx.graph.tensors[current].dtype, shape) if last else None
        current = (
            transpose(ctx, node, current, value, out)
            if kind == "transpose"
            else reshape(ctx, node, current, value, out)
        )
    if define and not steps:
        ctx.tensors[node] = current
    return current


def relayout_node(ctx: LoweringContext, node: fx.Node, src: fx.Node, define: bool = False) -> str:
    """``relayout`` from an FX value to ``node``'s own torch shape and order."""
    return relayout(
        ctx, node, ctx.tensor(src), dim_order(src), torch_shape(node), dim_order(node), define
    )


def fit_padding(
    size: int, kernel: int, stride: int, before: int, after: int, dilation: int = 1
) -> tuple[int, int]:
    """``(after padding, trailing elements to crop)`` that TOSA accepts along one axis.

    TOSA requires ``size + pads - effective kernel`` to divide by the stride exactly; torch
    floors, ignoring the last rows. So the unused rows are dropped: first from the padding,
    then (when there is not enough padding) from the input itself with a SLICE.
    """
    span = size + before + after - dilation * (kernel - 1) - 1
    after -= span % stride
    return max(after, 0), max(-after, 0)


def crop_trailing(ctx: LoweringContext, node: fx.Node, src: str, crop: Sequence[int]) -> str:
    """SLICE ``crop[i]`` trailing elements off each dim of ``src`` (no-op if all zero)."""
    if not any(crop):
        return src
    shape = ctx.graph.tensors[src].shape
    size = [d - c for d, c in zip(shape, crop)]
    out = ctx.temp(node, "cropped", size, ctx.graph.tensors[src].dtype)
    inputs = [
        src,
        ctx.const(f"{node.name}_start", [0] * len(shape), "shape"),
        ctx.const(f"{node.name}_size", size, "shape"),
    ]
    ctx.emit("SLICE", inputs, [out], node)
    return out
