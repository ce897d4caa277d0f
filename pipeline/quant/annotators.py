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
    QuantizationSpec,
    SharedQuantizationSpec,
)

from pipeline.normalise import attention, recurrent
from pipeline.quant import mask_specs
from pipeline.quant.constants import integer_codes, operand_spec
from pipeline.quant.mask_specs import finite
from pipeline.quant.schemes import BIAS_RANGE, QuantScheme
from pipeline.tosa.ops.op_compare import TARGETS as COMPARISONS
from pipeline.tosa.ops.op_table import TABLE_TARGETS

KEY = "quantization_annotation"
# Transposed convolutions: weights [in, out / groups, kh, kw], so per output channel is axis 1
# (output channel g * out/groups + j takes column j's scale).
TRANSPOSED = ("aten.conv_transpose1d.default", "aten.conv_transpose2d.input")
WEIGHTED = (
    "aten.conv2d.default",
    "aten.conv2d.padding",
    "aten.conv1d.default",
    "aten.conv1d.padding",
    "aten.linear.default",
    *TRANSPOSED,
)
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
    # Lookups and copies (the values are moved, never computed):
    "aten.embedding.default",  # args[0] is the table: the rows keep its quantization
    "aten.index.Tensor",
    "aten.index_select.default",
    "aten.gather.default",
    "aten.flip.default",
    "aten.as_strided_copy.default",
    "aten.as_strided.default",
    "aten.unfold.default",
    "aten.select_copy.int",
    "aten.expand.default",
    "aten.repeat.default",
    "aten.max_pool2d.default",
    "aten.avg_pool2d.default",
    "aten.adaptive_avg_pool2d.default",
    "aten.mean.dim",
    "aten.amax.default",
    "aten.amin.default",
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


def _is_float(node: fx.Node) -> bool:
    value = node.meta.get("val")
    return not isinstance(value, torch.Tensor) or value.dtype.is_floating_point


def _kept(spec, inputs: dict):
    """``spec``, or None when it shares an input edge that is not quantized."""
    shared = isinstance(spec, SharedQuantizationSpec) and isinstance(spec.edge_or_node, tuple)
    return None if shared and spec.edge_or_node[0] not in inputs else spec


def _mark(node: fx.Node, inputs: dict, output) -> None:
    """Annotate ``node``; only float values are quantized: integer and bool tensors (ids,
    masks, indices) are left as they are, whatever pattern they appear in."""
    inputs = {n: spec for n, spec in inputs.items() if _is_float(n)}
    inputs = {n: spec for n, spec in inputs.items() if _kept(spec, inputs) is not None}
    output = _kept(output, inputs) if _is_float(node) else None
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


def _bias_spec(
    x: fx.Node, weight: fx.Node, node: fx.Node, scheme: QuantScheme, groups: int = 1
) -> DerivedQuantizationSpec:
    """The bias scale: input scale x weight scale, per output channel (the weight's column
    scales repeated per group for a grouped transposed convolution), or one for the tensor
    when the weights have one."""
    per_tensor = scheme.weight.qscheme == torch.per_tensor_symmetric

    def derive(observers):
        act_scale, _ = observers[0].calculate_qparams()
        weight_scale, _ = observers[1].calculate_qparams()
        scale = (act_scale * weight_scale).to(torch.float32)
        scale = scale.reshape(()) if per_tensor else scale.repeat(groups)
        return scale, torch.zeros_like(scale, dtype=torch.int32)

    if per_tensor:
        qscheme, ch_axis = torch.per_tensor_symmetric, None
    else:
        qscheme, ch_axis = torch.per_channel_symmetric, 0
    return DerivedQuantizationSpec(
        [(x, node), (weight, node)], derive, torch.int32, *BIAS_RANGE, qscheme, ch_axis=ch_axis
    )


def annotate_weighted(node: fx.Node, scheme: QuantScheme) -> bool:
    if not _is(node, WEIGHTED):
        return False
    x, weight = node.args[0], node.args[1]
    transposed = _is(node, TRANSPOSED)
    groups = int(node.args[6]) if transposed and len(node.args) > 6 else 1
    weight_spec = replace(scheme.weight, ch_axis=1) if transposed else scheme.weight
    inputs = {x: scheme.activation, weight: weight_spec}
    bias = node.args[2] if len(node.args) > 2 else None
    if isinstance(bias, fx.Node):
        inputs[bias] = _bias_spec(x, weight, node, scheme, groups)
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
        inputs[bias] = _bias_spec(x, weight, node, scheme)
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
    their own qparams (a constant operand exact ones, ``constants.py``); the lowering rescales
    operands (and folds scalar operands) itself."""
    if not _is(node, BINARY):
        return False
    inputs = {a: operand_spec(a, scheme.activation) for a in node.args[:2]
              if isinstance(a, fx.Node)}  # fmt: skip
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
# prelu and pow by a number are annotated alike: their constant operand (the slopes, the
# exponent) stays float and goes into the lowering's tables or scales.
TABLES = (*TABLE_TARGETS, "aten.prelu.default", "aten.pow.Tensor_Scalar")


def annotate_table(node: fx.Node, scheme: QuantScheme) -> bool:
    # The tensor operand: the first, but ``2 ** x`` is pow.Scalar(2, x).
    x = next((a for a in node.args[:2] if isinstance(a, fx.Node)), None)
    if not _is(node, TABLES) or x is None:
        return False
    _mark(node, {x: scheme.activation}, scheme.activation)
    return True


# Reductions whose result leaves the input's range: the output gets its own qparams (the
# lowering sums in int32 and rescales once into them).
REDUCTIONS = ("aten.sum.dim_IntList", "aten.sum.default", "aten.cumsum.default")


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
    # Writes into x (x[idx] = v, x[:, ::2] = v): x, the values and the output.
    "aten.slice_scatter.default": lambda node: node.args[:2],
    "aten.select_scatter.default": lambda node: node.args[:2],
    "aten.copy.default": lambda node: node.args[:2],
    "aten.index_put.default": lambda node: (node.args[0], node.args[2]),
    # eq/ne/gt/ge/lt/le: the integer codes compare like the values (their output is bool).
    **{target: (lambda node: node.args[:2]) for target in COMPARISONS},
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


def annotate_masked_scores(node: fx.Node, scheme: QuantScheme) -> bool:
    """The two sums of a written-out attention that carry its mask
    (``pipeline/normalise/attention.py``): qparams derived from the scores', never observed."""
    specs = attention.masked_specs(node, scheme.activation)
    if specs is None:
        return False
    _mark(node, *specs)
    return True


def annotate_step(node: fx.Node, scheme: QuantScheme) -> bool:
    """A value of an unrolled LSTM/GRU step (``pipeline/normalise/recurrent.py``): annotated like
    any node, then its output shares the first step's qparams (one observer sees every step),
    and a given initial state the steps' state qparams."""
    if recurrent.step_group(node) is None:
        return False
    rest = ANNOTATORS[ANNOTATORS.index(annotate_step) + 1 :]
    if not any(annotator(node, scheme) for annotator in rest):
        return False
    own, first = node.meta[KEY], recurrent.first_of_group(node)
    theirs = first.meta.get(KEY) if first is not None else None
    if isinstance(own.output_qspec, QuantizationSpec) and theirs and theirs.output_qspec:
        own.output_qspec = SharedQuantizationSpec(first)
    state = recurrent.initial_state(node)
    if state is not None and state[0] in own.input_qspec_map:
        own.input_qspec_map[state[0]] = SharedQuantizationSpec(state[1])
    return True


MASKED_SUMS = ("aten.add.Tensor", "aten.sub.Tensor")


def annotate_masked_sum(node: fx.Node, scheme: QuantScheme) -> bool:
    """``x + mask`` / ``x - mask`` with ``mask`` built from integer/bool tensors and fills (an
    additive attention mask, ``pipeline/quant/mask_specs.py``): the mask observed with
    infinities clamped, the output's qparams derived from ``x``'s and the mask's."""
    if not _is(node, MASKED_SUMS):
        return False
    operands = list(node.args[:2])
    if not all(isinstance(a, fx.Node) and _is_float(a) for a in operands):
        return False
    subtract = str(node.target) == "aten.sub.Tensor"
    for x, mask in [operands] if subtract else [operands, operands[::-1]]:
        if mask_specs.is_mask_like(mask) and not mask_specs.is_mask_like(x):
            spec = scheme.activation
            output = mask_specs.masked_sum_spec(node, spec, x, mask, subtract)
            _mark(node, {x: spec, mask: mask_specs.finite(spec)}, output)
            return True
    return False


def annotate_where(node: fx.Node, scheme: QuantScheme) -> bool:
    """``where(condition, a, b)`` (masked_fill included, ``op_where.py``): both values and the
    output share one quantization; a fill (one-element constant) is not observed, it
    saturates the other value's qparams (``mask_specs``); a where of two fills (an additive
    mask being built) is observed with infinities clamped."""
    if not _is(node, ("aten.where.self",)):
        return False
    values = [v for v in node.args[1:3] if isinstance(v, fx.Node)]
    fills = [v for v in values if mask_specs.is_fill(v)]
    tensors = [v for v in values if v not in fills]
    spec = scheme.activation
    if not tensors:
        _mark(node, {}, mask_specs.finite(spec))
    elif fills:
        x = tensors[0]
        _mark(node, {x: spec}, mask_specs.masked_fill_spec(node, spec, x, fills[0]))
    else:
        shared = SharedQuantizationSpec((tensors[0], node))
        _mark(node, {tensors[0]: spec, **{t: shared for t in tensors[1:]}}, shared)
    return True


def annotate_cast(node: fx.Node, scheme: QuantScheme) -> bool:
    """``.to(dtype)`` (``op_cast.py``): a float made from integers or bools gets its own
    qparams (the lowering RESCALEs the integers onto them) - from a bool, observed by min/max:
    0 and 1 exactly (an error-minimising range would clip a sparse one-hot's ones); from
    int8 (int16 with int16 activations) the integers themselves, scale 1 -, a float
    to float keeps its input's, a quantized float made bool is read as codes; integers stay
    unquantized."""
    if not _is(node, ("aten._to_copy.default",)) or not isinstance(node.args[0], fx.Node):
        return False
    x = node.args[0]
    if _is_float(x) and _is_float(node):
        _mark(node, {x: scheme.activation}, SharedQuantizationSpec((x, node)))
    elif _is_float(node) and x.meta["val"].dtype == torch.bool:
        _mark(node, {x: scheme.activation}, finite(scheme.activation))
    elif _is_float(node) and integer_codes(x.meta["val"].dtype, scheme.activation):
        _mark(node, {}, integer_codes(x.meta["val"].dtype, scheme.activation))
    else:
        _mark(node, {x: scheme.activation}, scheme.activation)
    return True


ANNOTATORS: tuple[Callable[[fx.Node, QuantScheme], bool], ...] = (
    annotate_masked_scores,  # before annotate_binary, which would observe the masked sum
    annotate_masked_sum,  # likewise, for masks built in the model
    annotate_where,
    annotate_cast,
    annotate_step,  # before the rest, which it runs itself
    annotate_weighted,  # before annotate_shared: it claims the activation that follows
    annotate_weight_product,  # likewise; and before annotate_binary, which claims x @ y
    annotate_binary,  # likewise
    annotate_shared_inputs,
    annotate_reduction,  # likewise
    annotate_table,
    annotate_shared,
)
