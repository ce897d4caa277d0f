"""Total coverage: every node the pattern annotators leave gets an annotation here, or is left
as it is on purpose - so the program is always quantized and the lowering names the operator
it has no form for (with the user's line), or lowers it when a visitor exists, instead of
stopping on "a float program".

The pattern annotators (``annotators.py``) give the operators the lowering knows the qparams
their lowering needs. Every other node is, in this order:

- left as it is when it neither takes nor makes a float tensor: integer and bool tensors
  (int64 ids, masks, indices), shapes and symbolic sizes are never observed (an observer only
  takes floats); likewise a node with a tensor keyword argument (torchao observes positional
  inputs only) and ``torch.cond`` (its branches are graphs of their own, never quantized;
  one whose predicate is computed at run time is refused before quantization, with its line,
  by ``refuse_runtime_conditions``);
- data movement - a view (a schema returning an alias), a ``*_copy`` view, or one of
  ``MOVES`` (flip, roll, cat, gather, max pool, amax, sort values, padding, ...): its float
  inputs and output share the first float input's qparams, so its integers are moved and
  none is computed, as such an operator's lowering needs (an input quantized otherwise gets a
  requantize);
- anything else, an element-wise operator's form: each float input observed, and the float
  output - for an operator with several outputs, each float ``getitem`` of it - observed with
  qparams of its own.
"""

from __future__ import annotations

import operator

import torch
from torch import fx
from torchao.quantization.pt2e.quantizer import QuantizationAnnotation, SharedQuantizationSpec

from pipeline.errors import UnsupportedOperatorError, UnsupportedOperatorsError
from pipeline.quant.schemes import QuantScheme
from pipeline.fx import source_of

KEY = "quantization_annotation"
# Operators that are not views but whose outputs are some of their inputs' values (or zeros,
# which every quantization holds exactly).
MOVES = frozenset(
    {
        "aten.clone.default", "aten.flip.default", "aten.roll.default", "aten.repeat.default",
        "aten.tile.default", "aten.cat.default", "aten.stack.default", "aten.gather.default",
        "aten.index_select.default", "aten.index.Tensor", "aten.take.default",
        "aten.take_along_dim.default", "aten.repeat_interleave.self_int",
        "aten.pixel_shuffle.default", "aten.pixel_unshuffle.default",
        "aten.channel_shuffle.default", "aten.native_channel_shuffle.default",
        "aten.constant_pad_nd.default", "aten.pad.default", "aten.reflection_pad1d.default",
        "aten.reflection_pad2d.default", "aten.reflection_pad3d.default",
        "aten.replication_pad1d.default", "aten.replication_pad2d.default",
        "aten.replication_pad3d.default", "aten.max_pool1d.default", "aten.max_pool2d.default",
        "aten.max_pool3d.default", "aten.max_pool2d_with_indices.default",
        "aten.max_pool3d_with_indices.default", "aten.adaptive_max_pool1d.default",
        "aten.adaptive_max_pool2d.default", "aten.amax.default", "aten.amin.default",
        "aten.max.default", "aten.min.default", "aten.max.dim", "aten.min.dim",
        "aten.aminmax.default", "aten.sort.default", "aten.topk.default",
        "aten.kthvalue.default", "aten.median.default", "aten.median.dim",
        "aten.cummax.default", "aten.cummin.default", "aten.tril.default", "aten.triu.default",
        "aten.diag_embed.default", "aten.narrow_copy.default", "aten.index_copy.default",
        "aten.index_put.default", "aten.scatter.src", "aten.slice_scatter.default",
        "aten.select_scatter.default", "aten.masked_select.default", "aten.rot90.default",
        "aten.im2col.default", "aten.unfold.default", "aten.copy.default",
    }
)  # fmt: skip
# Left as they are (higher-order operators, by name): their operands are graphs.
UNOBSERVED = frozenset({"cond", "while_loop"})


def is_annotated(node: fx.Node) -> bool:
    return KEY in node.meta and node.meta[KEY]._annotated


def is_float_tensor(value) -> bool:
    """A node (or value) holding one float tensor; tuples, numbers and integers are not."""
    if isinstance(value, fx.Node):
        value = value.meta.get("val")
    return isinstance(value, torch.Tensor) and value.dtype.is_floating_point


def float_inputs(node: fx.Node) -> list[fx.Node]:
    """The node's float tensor operands (inside lists too), each once, in order."""
    found: list[fx.Node] = []
    fx.node.map_arg(node.args, lambda n: found.append(n) if is_float_tensor(n) else None)
    return list(dict.fromkeys(found))


def is_data_movement(node: fx.Node) -> bool:
    """Whether every output value of ``node`` is one of its inputs' values (or zero)."""
    target = node.target
    if str(target) in MOVES:
        return True
    schema = getattr(target, "_schema", None)
    if schema is None:
        return False
    if torch.Tag.view_copy in getattr(target, "tags", ()):
        return True
    return not schema.is_mutable and any(r.alias_info is not None for r in schema.returns)


def _has_tensor_kwargs(node: fx.Node) -> bool:
    found: list[fx.Node] = []
    fx.node.map_arg(node.kwargs, found.append)
    return bool(found)


def _annotate_item(node: fx.Node, scheme: QuantScheme) -> None:
    """``op(...)[i]`` of an operator with several outputs: a float item is observed, or shares
    the operator's first float input's qparams when the operator only moves values."""
    producer = node.args[0]
    if not is_float_tensor(node) or not isinstance(producer, fx.Node):
        return
    sources = float_inputs(producer) if is_annotated(producer) else []
    if sources and is_data_movement(producer):
        output = SharedQuantizationSpec((sources[0], producer))
    else:
        output = scheme.activation
    node.meta[KEY] = QuantizationAnnotation({}, output, _annotated=True)


def annotate_rest(node: fx.Node, scheme: QuantScheme) -> None:
    """Annotate ``node`` unless a pattern annotator did or it is left as it is on purpose."""
    if node.op != "call_function" or is_annotated(node) or str(node.target) in UNOBSERVED:
        return
    if node.target is operator.getitem:
        _annotate_item(node, scheme)
        return
    floats, output_float = float_inputs(node), is_float_tensor(node)
    if not (floats or output_float) or _has_tensor_kwargs(node):
        return
    if floats and is_data_movement(node):
        shared = SharedQuantizationSpec((floats[0], node))
        inputs = {floats[0]: scheme.activation, **{x: shared for x in floats[1:]}}
        output = shared if output_float else None
    else:
        inputs = {x: scheme.activation for x in floats}
        output = scheme.activation if output_float else None
    node.meta[KEY] = QuantizationAnnotation(inputs, output, _annotated=True)


def refuse_runtime_conditions(module: fx.GraphModule, where: str = "") -> None:
    """Every ``torch.cond`` whose predicate is computed from the inputs, in one error: the
    graph must be one dataflow (torchao's q/dq passes also fail inside nested branches).

    Raises:
        UnsupportedOperatorsError: naming each such cond and the user's line.
    """
    blockers = [
        UnsupportedOperatorError(
            f"{where}: {node.name}" if where else node.name,
            "torch.ops.higher_order.cond with a predicate computed at run time",
            source_of(node),
            "torch.cond must have a predicate that folds to a constant",
            "Compute both branches and pick with torch.where, or choose the branch outside "
            "the model",
        )
        if str(node.target) == "cond" else
        UnsupportedOperatorError(
            f"{where}: {node.name}" if where else node.name,
            "torch.ops.higher_order.while_loop",
            source_of(node),
            "the graph must be one dataflow without loops",
            "Unroll the loop: a Python for loop over a fixed count exports as straight-line "
            "code",
        )
        for node in module.graph.nodes
        if node.op == "call_function" and (
            str(node.target) == "while_loop"
            or str(node.target) == "cond"
            and isinstance(node.args[0], fx.Node) and node.args[0].op != "get_attr")
    ]  # fmt: skip
    if blockers:
        raise UnsupportedOperatorsError(where, blockers)
