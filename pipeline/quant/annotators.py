"""Annotation patterns, tried in order on every node; the first that matches annotates it.

Which FX target takes which rule is not listed here: each operator file declares it
(``pipeline/tosa/ops/op_<name>.py``, kinds in ``rules.py``) and the quantizer's caller hands
the declarations in (``Rules``: target -> its rules), so only operators the TOSA lowering
supports are annotated by a rule. What stays here is how each kind annotates, and the order,
with the cross-cutting patterns that belong to no one operator: an attention's masked sums
(before the plain sums), a recurrent step's sharing (around every rule after it), and a
fused activation (``conv/linear/add -> relu`` quantizes only the activation's output, which
lets the lowering fold it into the producer's RESCALE).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
from pipeline.quant.rules import Rule
from pipeline.quant.schemes import BIAS_RANGE, QuantScheme

KEY = "quantization_annotation"
Rules = Mapping[str, tuple[Rule, ...]]  # FX target -> the rules its operator file declares
def _rule(node, rules: Rules, kind: str) -> Rule | None:
    """The rule of ``kind`` that ``node``'s operator file declares for its target, if any."""
    if not isinstance(node, fx.Node) or node.op != "call_function":
        return None
    return next((r for r in rules.get(str(node.target), ()) if r.kind == kind), None)


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


def _fused_activation(node: fx.Node, rules: Rules) -> fx.Node | None:
    users = list(node.users)
    if len(users) != 1 or is_annotated(users[0]):
        return None
    shared = _rule(users[0], rules, "shared")
    return users[0] if shared is not None and shared.activation else None


def _mark_output(node: fx.Node, inputs: dict, scheme: QuantScheme, rules: Rules) -> None:
    """Annotate ``node``'s inputs; its output, or its fused activation's output."""
    activation = _fused_activation(node, rules)
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


def annotate_weighted(node: fx.Node, scheme: QuantScheme, rules: Rules) -> bool:
    rule = _rule(node, rules, "weighted")
    if rule is None:
        return False
    x, weight = node.args[0], node.args[1]
    # Transposed: weights [in, out / groups, kh, kw], so per output channel is axis 1
    # (output channel g * out/groups + j takes column j's scale).
    transposed = rule.transposed
    groups = int(node.args[6]) if transposed and len(node.args) > 6 else 1
    weight_spec = replace(scheme.weight, ch_axis=1) if transposed else scheme.weight
    inputs = {x: scheme.activation, weight: weight_spec}
    bias = node.args[2] if len(node.args) > 2 else None
    if isinstance(bias, fx.Node):
        inputs[bias] = _bias_spec(x, weight, node, scheme, groups)
    _mark_output(node, inputs, scheme, rules)
    return True


def _is_weight(node) -> bool:
    is_constant = isinstance(node, fx.Node) and node.op == "get_attr" and "val" in node.meta
    return is_constant and node.meta["val"].dim() == 2


def annotate_weight_product(node: fx.Node, scheme: QuantScheme, rules: Rules) -> bool:
    """``x @ W``, ``mm(x, W)``, ``addmm(b, x, W)`` with a parameter ``W`` [in, out]: a linear
    layer (the lowering's 1x1 CONV2D), so ``W`` is per-channel along its output axis 1."""
    rule = _rule(node, rules, "weight_product")
    if rule is None:
        return False
    x, weight = (node.args[i] for i in rule.positions[:2])
    bias = node.args[rule.positions[2]] if len(rule.positions) > 2 else None
    if not _is_weight(weight):
        return False
    inputs = {x: scheme.activation, weight: replace(scheme.weight, ch_axis=1)}
    if isinstance(bias, fx.Node):
        inputs[bias] = _bias_spec(x, weight, node, scheme)
    _mark_output(node, inputs, scheme, rules)
    return True


def annotate_binary(node: fx.Node, scheme: QuantScheme, rules: Rules) -> bool:
    """add/sub/mul/div/matmul/mm: each tensor operand and the output (or its activation) get
    their own qparams (a constant operand exact ones, ``constants.py``); the lowering rescales
    operands (and folds scalar operands) itself."""
    if _rule(node, rules, "binary") is None:
        return False
    inputs = {a: operand_spec(a, scheme.activation) for a in node.args[:2]
              if isinstance(a, fx.Node)}  # fmt: skip
    _mark_output(node, inputs, scheme, rules)
    return True


def annotate_shared(node: fx.Node, scheme: QuantScheme, rules: Rules) -> bool:
    if _rule(node, rules, "shared") is None or not isinstance(node.args[0], fx.Node):
        return False
    x = node.args[0]
    _mark(node, {x: scheme.activation}, SharedQuantizationSpec((x, node)))
    return True


def annotate_table(node: fx.Node, scheme: QuantScheme, rules: Rules) -> bool:
    """A unary function the lowering turns into a lookup TABLE: its own output qparams (prelu
    and pow by a number alike: their constant operand stays float and goes into the
    lowering's tables or scales)."""
    # The tensor operand: the first, but ``2 ** x`` is pow.Scalar(2, x).
    x = next((a for a in node.args[:2] if isinstance(a, fx.Node)), None)
    if _rule(node, rules, "table") is None or x is None:
        return False
    _mark(node, {x: scheme.activation}, scheme.activation)
    return True


def annotate_reduction(node: fx.Node, scheme: QuantScheme, rules: Rules) -> bool:
    """A sum whose result leaves the input's range: the output gets its own qparams (the
    lowering sums in int32 and rescales once into them)."""
    rule = _rule(node, rules, "reduction")
    if rule is None or not isinstance(node.args[0], fx.Node):
        return False
    x = node.args[0]
    if rule.int16_shared and scheme.activation.dtype == torch.int16:
        _mark(node, {x: scheme.activation}, SharedQuantizationSpec((x, node)))
        return True
    _mark_output(node, {x: scheme.activation}, scheme, rules)
    return True


def _operands(node: fx.Node, positions: tuple[int, ...]) -> list:
    """The arguments at ``positions`` that the node has, a list argument spread."""
    found = []
    for i in positions:
        if i < len(node.args):
            value = node.args[i]
            found.extend(value if isinstance(value, (list, tuple)) else [value])
    return found


def annotate_shared_inputs(node: fx.Node, scheme: QuantScheme, rules: Rules) -> bool:
    """cat/minimum/maximum/clamp by a tensor/comparisons/writes into x: every input and the
    output share the first input's qparams, so the integer operator only moves or compares
    values (an input quantized otherwise gets a dq -> q pair in torch's graph: one RESCALE)."""
    rule = _rule(node, rules, "shared_inputs")
    if rule is None:
        return False
    tensors = [t for t in _operands(node, rule.positions) if isinstance(t, fx.Node)]
    shared = SharedQuantizationSpec((tensors[0], node))
    inputs = {t: shared for t in tensors if t is not tensors[0]}
    _mark(node, {tensors[0]: scheme.activation, **inputs}, shared)
    return True


def annotate_masked_scores(node: fx.Node, scheme: QuantScheme, rules: Rules) -> bool:
    """The two sums of a written-out attention that carry its mask
    (``pipeline/normalise/attention.py``): qparams derived from the scores', never observed."""
    specs = attention.masked_specs(node, scheme.activation)
    if specs is None:
        return False
    _mark(node, *specs)
    return True


def annotate_step(node: fx.Node, scheme: QuantScheme, rules: Rules) -> bool:
    """A value of an unrolled LSTM/GRU step (``pipeline/normalise/recurrent.py``): annotated like
    any node, then its output shares the first step's qparams (one observer sees every step),
    and a given initial state the steps' state qparams."""
    if recurrent.step_group(node) is None:
        return False
    rest = ANNOTATORS[ANNOTATORS.index(annotate_step) + 1 :]
    if not any(annotator(node, scheme, rules) for annotator in rest):
        return False
    own, first = node.meta[KEY], recurrent.first_of_group(node)
    theirs = first.meta.get(KEY) if first is not None else None
    if isinstance(own.output_qspec, QuantizationSpec) and theirs and theirs.output_qspec:
        own.output_qspec = SharedQuantizationSpec(first)
    state = recurrent.initial_state(node)
    if state is not None and state[0] in own.input_qspec_map:
        own.input_qspec_map[state[0]] = SharedQuantizationSpec(state[1])
    return True


def annotate_masked_sum(node: fx.Node, scheme: QuantScheme, rules: Rules) -> bool:
    """``x + mask`` / ``x - mask`` with ``mask`` built from integer/bool tensors and fills (an
    additive attention mask, ``pipeline/quant/mask_specs.py``): the mask observed with
    infinities clamped, the output's qparams derived from ``x``'s and the mask's."""
    rule = _rule(node, rules, "masked_sum")
    if rule is None:
        return False
    operands = list(node.args[:2])
    if not all(isinstance(a, fx.Node) and _is_float(a) for a in operands):
        return False
    subtract = rule.subtract
    for x, mask in [operands] if subtract else [operands, operands[::-1]]:
        if mask_specs.is_mask_like(mask) and not mask_specs.is_mask_like(x):
            spec = scheme.activation
            output = mask_specs.masked_sum_spec(node, spec, x, mask, subtract)
            _mark(node, {x: spec, mask: mask_specs.finite(spec)}, output)
            return True
    return False


def annotate_where(node: fx.Node, scheme: QuantScheme, rules: Rules) -> bool:
    """``where(condition, a, b)`` (masked_fill included, ``op_where.py``): both values and the
    output share one quantization; a fill (one-element constant) is not observed, it
    saturates the other value's qparams (``mask_specs``); a where of two fills (an additive
    mask being built) is observed with infinities clamped."""
    if _rule(node, rules, "where") is None:
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


def annotate_cast(node: fx.Node, scheme: QuantScheme, rules: Rules) -> bool:
    """``.to(dtype)`` (``op_cast.py``): a float made from integers or bools gets its own
    qparams (the lowering RESCALEs the integers onto them) - from a bool, observed by min/max:
    0 and 1 exactly (an error-minimising range would clip a sparse one-hot's ones); from
    int8 (int16 with int16 activations) the integers themselves, scale 1 -, a float
    to float keeps its input's, a quantized float made bool is read as codes; integers stay
    unquantized."""
    if _rule(node, rules, "cast") is None or not isinstance(node.args[0], fx.Node):
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


ANNOTATORS: tuple[Callable[[fx.Node, QuantScheme, Rules], bool], ...] = (
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
