"""Annotation patterns, tried in order on every node; the first that matches annotates it.

Only operators the TOSA lowering supports are annotated. Anything else stays float, so the
lowering stops on it with an UnsupportedOperatorError - never a silent CPU fallback.
Fused patterns come first: ``conv/linear/add -> activation`` quantizes only the activation's
output, which lets the lowering fold the activation into the producer's RESCALE.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import torch
from torch import fx
from torchao.quantization.pt2e.quantizer import (
    DerivedQuantizationSpec,
    QuantizationAnnotation,
    SharedQuantizationSpec,
)

from pipeline.quant.schemes import BIAS_RANGE, QuantScheme
from pipeline.tosa.ops.op_table import TABLE_TARGETS as TABLES

KEY = "quantization_annotation"
WEIGHTED = ("aten.conv2d.default", "aten.linear.default")
# Matrix products whose second operand may be a [in, out] weight: x @ W, mm, addmm(b, x, W).
PRODUCTS = ("aten.matmul.default", "aten.mm.default", "aten.addmm.default")
ACTIVATIONS = (
    "aten.relu.default",
    "aten.relu6.default",
    "aten.hardtanh.default",
    "aten.clamp.default",
)
# Ops whose integer output reuses the input's quantization (max, move, average of equals).
SHARED = (
    "aten.max_pool2d.default",
    "aten.avg_pool2d.default",
    "aten.adaptive_avg_pool2d.default",
    "aten.mean.dim",
    "aten.amax.default",
    "aten.select.int",
    "aten.permute.default",
    "aten.transpose.int",
    "aten.clone.default",
    "aten.slice.Tensor",
    "aten.squeeze.dim",
    "aten.squeeze.dims",
    "aten.unsqueeze.default",
    "aten.upsample_nearest2d.vec",
    "aten.upsample_nearest2d.default",
    "aten.upsample_bilinear2d.vec",  # a weighted average of its inputs
    "aten.upsample_bilinear2d.default",
    "aten.view.default",
    "aten.reshape.default",
    "aten.flatten.using_ints",
    "aten._unsafe_view.default",
    "aten.pad.default",
    "aten.constant_pad_nd.default",
    *ACTIVATIONS,
)


def _is(node: fx.Node, targets) -> bool:
    return node.op == "call_function" and str(node.target) in targets


def is_annotated(node: fx.Node) -> bool:
    return KEY in node.meta and node.meta[KEY]._annotated


def _mark(node: fx.Node, inputs: dict, output) -> None:
    node.meta[KEY] = QuantizationAnnotation(inputs, output, _annotated=True)


def _fused_activation(node: fx.Node) -> fx.Node | None:
    users = list(node.users)
    if len(users) == 1 and _is(users[0], ACTIVATIONS) and not is_annotated(users[0]):
        return users[0]
    return None


def _mark_output(node: fx.Node, inputs: dict, scheme: QuantScheme) -> None:
    """Annotate ``node``'s inputs; its output, or its fused activation's output."""
    activation = _fused_activation(node)
    _mark(node, inputs, None if activation else scheme.activation)
    if activation is not None:
        _mark(activation, {}, scheme.activation)


def _bias_spec(x: fx.Node, weight: fx.Node, node: fx.Node) -> DerivedQuantizationSpec:
    def derive(observers):
        act_scale, _ = observers[0].calculate_qparams()
        weight_scale, _ = observers[1].calculate_qparams()
        scale = (act_scale * weight_scale).to(torch.float32)
        return scale, torch.zeros_like(scale, dtype=torch.int32)

    return DerivedQuantizationSpec(
        [(x, node), (weight, node)],
        derive,
        torch.int32,
        *BIAS_RANGE,
        torch.per_channel_symmetric,
        ch_axis=0,
    )


def annotate_weighted(node: fx.Node, scheme: QuantScheme) -> bool:
    if not _is(node, WEIGHTED):
        return False
    x, weight = node.args[0], node.args[1]
    inputs = {x: scheme.activation, weight: scheme.weight}
    bias = node.args[2] if len(node.args) > 2 else None
    if isinstance(bias, fx.Node):
        inputs[bias] = _bias_spec(x, weight, node)
    _mark_output(node, inputs, scheme)
    return True


def _is_weight(node) -> bool:
    is_constant = isinstance(node, fx.Node) and node.op == "get_attr" and "val" in node.meta
    return is_constant and node.meta["val"].dim() == 2


def annotate_weight_product(node: fx.Node, scheme: QuantScheme) -> bool:
    """``x @ W``, ``mm(x, W)``, ``addmm(b, x, W)`` with a parameter ``W`` [in, out]: a linear
    layer (the lowering's 1x1 CONV2D), so ``W`` is per-channel along its output axis 1."""
    if not _is(node, PRODUCTS):
        return False
    addmm = str(node.target) == "aten.addmm.default"
    bias, (x, weight) = (node.args[0], node.args[1:3]) if addmm else (None, node.args[:2])
    if not _is_weight(weight):
        return False
    inputs = {x: scheme.activation, weight: replace(scheme.weight, ch_axis=1)}
    if isinstance(bias, fx.Node):
        inputs[bias] = _bias_spec(x, weight, node)
    _mark_output(node, inputs, scheme)
    return True


BINARY = (
    "aten.add.Tensor",
    "aten.sub.Tensor",
    "aten.mul.Tensor",
    "aten.matmul.default",
    "aten.mm.default",
    "aten.bmm.default",
    "aten.div.Tensor",
)


def annotate_binary(node: fx.Node, scheme: QuantScheme) -> bool:
    """add/sub/mul/div/matmul/mm: each tensor operand and the output (or its activation) get
    their own qparams; the lowering rescales operands (and folds scalar operands) itself."""
    if not _is(node, BINARY):
        return False
    inputs = {a: scheme.activation for a in node.args[:2] if isinstance(a, fx.Node)}
    _mark_output(node, inputs, scheme)
    return True


def annotate_shared(node: fx.Node, scheme: QuantScheme) -> bool:
    if not _is(node, SHARED) or not isinstance(node.args[0], fx.Node):
        return False
    x = node.args[0]
    _mark(node, {x: scheme.activation}, SharedQuantizationSpec((x, node)))
    return True


# Unary element-wise operators the lowering turns into a lookup TABLE get their own output
# qparams; the list is the lowering's (TABLES), so a new table operator needs no edit here.


def annotate_table(node: fx.Node, scheme: QuantScheme) -> bool:
    if not _is(node, TABLES) or not isinstance(node.args[0], fx.Node):
        return False
    _mark(node, {node.args[0]: scheme.activation}, scheme.activation)
    return True


# Reductions whose result leaves the input's range: the output gets its own qparams (the
# lowering sums in int32 and rescales once into them).
REDUCTIONS = ("aten.sum.dim_IntList", "aten.sum.default")


def annotate_reduction(node: fx.Node, scheme: QuantScheme) -> bool:
    if not _is(node, REDUCTIONS) or not isinstance(node.args[0], fx.Node):
        return False
    _mark_output(node, {node.args[0]: scheme.activation}, scheme)
    return True


# Ops whose inputs and output all share the first input's qparams, so the integer operator
# only moves or compares values: exact, for minimum/maximum the output is one of the inputs
# bit for bit. An input quantized otherwise gets a dq -> q pair in torch's graph (one RESCALE).
SHARED_INPUTS = {
    "aten.cat.default": lambda node: node.args[0],
    "aten.minimum.default": lambda node: node.args[:2],
    "aten.maximum.default": lambda node: node.args[:2],
    "aten.clamp_min.Tensor": lambda node: node.args[:2],
    "aten.clamp_max.Tensor": lambda node: node.args[:2],
}


def annotate_shared_inputs(node: fx.Node, scheme: QuantScheme) -> bool:
    """cat/minimum/maximum/clamp by a tensor: every input and the output share the first
    input's qparams."""
    if not _is(node, SHARED_INPUTS):
        return False
    tensors = [t for t in SHARED_INPUTS[str(node.target)](node) if isinstance(t, fx.Node)]
    shared = SharedQuantizationSpec((tensors[0], node))
    inputs = {t: shared for t in tensors if t is not tensors[0]}
    _mark(node, {tensors[0]: scheme.activation, **inputs}, shared)
    return True


ANNOTATORS: tuple[Callable[[fx.Node, QuantScheme], bool], ...] = (
    annotate_weighted,  # before annotate_shared: it claims the activation that follows
    annotate_weight_product,  # likewise; and before annotate_binary, which claims x @ y
    annotate_binary,  # likewise
    annotate_shared_inputs,
    annotate_reduction,  # likewise
    annotate_table,
    annotate_shared,
)
