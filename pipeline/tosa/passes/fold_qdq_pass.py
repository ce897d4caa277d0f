"""Fold quantize/dequantize nodes into ``meta["qparams"]`` on the integer values they frame.

After this pass every edge of the quantized region carries an integer tensor whose meaning
(``real = (q - zp) * scale``) is stored on its producer, and operators read their inputs'
qparams from there to compute their own integer scales:

* ``op -> quantize``: ``op`` produces the integer tensor (its visitor rescales into these
  qparams); the quantize node disappears.
* ``dequantize -> op``: ``op`` reads the integer tensor directly.
* ``dequantize -> quantize`` with nothing between (a requantization): a ``tosa.rescale``
  marker node, lowered to one RESCALE.
* ``constant -> quantize`` (weights the converter did not pre-quantize): quantized here.
"""

from __future__ import annotations

import torch
from torch import fx

from pipeline.errors import UserError
from pipeline.tosa import markers
from pipeline.tosa.passes.context import PassContext, const_node
from pipeline.tosa.quant_math import QParams

_QUANTIZE = (
    "quantized_decomposed.quantize_per_tensor.default",
    "quantized_decomposed.quantize_per_tensor.tensor",
    "quantized_decomposed.quantize_per_channel.default",
)
_DEQUANTIZE = (
    "quantized_decomposed.dequantize_per_tensor.default",
    "quantized_decomposed.dequantize_per_tensor.tensor",
    "quantized_decomposed.dequantize_per_channel.default",
)
_DTYPES = {torch.int8: "int8", torch.int16: "int16", torch.int32: "int32"}


def _is(node: fx.Node, targets) -> bool:
    return isinstance(node, fx.Node) and node.op == "call_function" and str(node.target) in targets


def _value(arg):
    return arg.meta["const"] if isinstance(arg, fx.Node) else arg


def qparams_of(node: fx.Node, where: str) -> QParams:
    """The QParams a quantize/dequantize node's arguments describe."""
    per_channel = str(node.target).endswith("per_channel.default")
    if per_channel:
        _, scale, zp, axis, qmin, qmax, dtype = node.args[:7]
    else:
        (_, scale, zp, qmin, qmax, dtype), axis = node.args[:6], None
    if dtype not in _DTYPES:
        raise UserError(
            f"{where}: {node.name}: quantized type must be one of "
            f"{', '.join(map(str, _DTYPES))}; got {dtype}"
        )
    scales = torch.as_tensor(_value(scale), dtype=torch.float64).reshape(-1)
    zps = torch.as_tensor(_value(zp)).reshape(-1)
    if bool((zps != zps[0]).any()):
        raise UserError(
            f"{where}: {node.name}: per-channel zero points must all be equal "
            f"(TOSA has one zero point per tensor); got {zps.tolist()}"
        )
    return QParams(
        tuple(scales.tolist()),
        int(zps[0]),
        _DTYPES[dtype],
        int(qmin),
        int(qmax),
        None if axis is None else int(axis),
    )


def _rescale_node(gm: fx.GraphModule, source: fx.Node, like: fx.Node, qparams: QParams):
    with gm.graph.inserting_after(like):
        node = gm.graph.call_function(markers.rescale, (source,))
    node.meta.update({k: v for k, v in like.meta.items() if k != "qparams"}, qparams=qparams)
    return node


def _fold_quantize(gm: fx.GraphModule, q: fx.Node, where: str) -> None:
    qparams, source = qparams_of(q, where), q.args[0]
    if _is(source, _DEQUANTIZE):
        replacement = _rescale_node(gm, source.args[0], q, qparams)
    elif source.meta.get("const") is not None:
        replacement = const_node(gm, f"{q.name}_const", q.target(*[_value(a) for a in q.args]))
        replacement.meta["qparams"] = qparams
    elif source.meta.get("qparams", qparams) != qparams:
        replacement = _rescale_node(gm, source, q, qparams)
    else:
        source.meta["qparams"], replacement = qparams, source
    q.replace_all_uses_with(replacement)
    gm.graph.erase_node(q)


def _fold_dequantize(gm: fx.GraphModule, dq: fx.Node, where: str) -> None:
    qparams, source = qparams_of(dq, where), dq.args[0]
    known = source.meta.setdefault("qparams", qparams)
    if (known.scale, known.zero_point, known.dtype) != (
        qparams.scale,
        qparams.zero_point,
        qparams.dtype,
    ):
        raise UserError(
            f"{where}: {dq.name}: dequantize parameters must match the tensor's "
            f"quantization {known}; got {qparams}"
        )
    dq.replace_all_uses_with(source)
    gm.graph.erase_node(dq)


def run(gm: fx.GraphModule, ctx: PassContext) -> None:
    for node in list(gm.graph.nodes):
        if _is(node, _QUANTIZE):
            _fold_quantize(gm, node, ctx.where)
    for node in list(gm.graph.nodes):
        if _is(node, _DEQUANTIZE):
            _fold_dequantize(gm, node, ctx.where)
    gm.graph.eliminate_dead_code()
