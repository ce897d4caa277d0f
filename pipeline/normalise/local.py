"""The decompositions real models need, done in the graph instead of by re-tracing it.

``program.run_decompositions(table)`` re-traces the whole program (about 0.6 s, plus the cost
of every node: for MobileNetV2 as long as ``torch.export`` itself) whenever one node needs a
decomposition. In what users write, the only such nodes are usually a handful of kinds, each
rewritten here as the re-trace rewrites it:

- ``aten.batch_norm`` in inference (``training=False``, running statistics given):
  ``_native_batch_norm_legit_no_training`` and the ``getitem`` of its output;
- eval-mode ``aten.dropout``: ``clone`` (a no-op, removed later); eval-mode ``dropout_``:
  nothing (its input is its value);
- ``flatten`` of a contiguous tensor: a ``view`` to the output shape (nothing when that is the
  input's shape), as its composite kernel writes it;
- in-place operators on an intermediate value (``x.relu_()``, ``out += identity``,
  ``nn.ReLU6(inplace=True)``): their functional counterpart (the schema's name without the
  trailing underscore, same overload and arguments), every later use reading its result; one
  whose counterpart is itself composite is written as torch's kernel writes it (``relu6``:
  ``hardtanh(x, 0, 6)``);
- a call our table's function returns NotImplemented for (``keeps``: a constant ``pad``) is
  kept, as the re-trace keeps it.

Every other node must be one the re-trace keeps as it is: an operator with a kernel of its own
or a composite torch.export preserves (``_is_preservable_cia_op``: functional, no alias), not
in the table. An in-place operator is rewritten here only when what it writes is an
intermediate made by an operator that returns a new tensor (not a view), and only pure
operators read it (no view or alias of it anywhere): the value then has one reader order, the
graph's. Anything else (a write into a view, an argument or a buffer, another operator to
decompose, a training-mode BatchNorm, a higher-order operator) leaves the program as it is and
``decompose_locally`` returns None: the caller re-traces as before.

The result is the re-trace's program: the new nodes keep the old node's stack trace, module
stack and ``torch_fn`` and get a ``val`` computed by the new operator on the fake inputs; every
call node is named afresh in graph order as the re-trace names it (``relu_`` -> ``relu``; an
operator of n outputs uses n ``getitem`` names); values carry no gradient; the program has the
ATen dialect's verifier and its module call graph updated. Saved, it is the re-trace's
``model.pt2`` byte for byte (``tests/normalise/test_local.py``).
"""

from __future__ import annotations

import copy
import operator

import torch
from torch import fx
from torch._export.utils import _is_preservable_cia_op
from torch._guards import detect_fake_mode
from torch.export import ExportedProgram
from torch.export.exported_program import (
    _get_updated_module_call_graph,
    _get_updated_range_constraints,
)
from torch.export.graph_signature import TensorArgument
from torch.fx.passes.shape_prop import _extract_tensor_metadata

from pipeline.normalise.table import needs_decomposition

aten = torch.ops.aten

_BATCH_NORM = aten.batch_norm.default
_DROPOUT = aten.dropout.default
_DROPOUT_INPLACE = aten.dropout_.default
_FLATTEN = aten.flatten.using_ints
_SAME = "the input itself"
# Functional counterparts that are composite themselves, as torch's own kernel writes them.
_COMPOSITE_FORMS = {aten.relu6.default: lambda a: (a[0], 0, 6)}
_COMPOSITE_TARGETS = {aten.relu6.default: aten.hardtanh.default}
# Node meta the re-trace keeps from the node it rewrites.
_KEPT_META = ("stack_trace", "nn_module_stack", "source_fn_stack", "torch_fn", "custom",
              "seq_nr")


def _fresh(target) -> bool:
    """An operator that returns new tensors: no view, alias or write in its schema."""
    schema = getattr(target, "_schema", None)
    if schema is None or schema.is_mutable:
        return False
    return all(ret.alias_info is None for ret in schema.returns)


def _functional(target):
    """The functional counterpart of an in-place operator writing its first argument (``relu_``
    -> ``relu``), or None (an ``out=`` form, a write elsewhere, no such operator)."""
    schema = getattr(target, "_schema", None)
    if schema is None or not schema.is_mutable or not schema.arguments:
        return None
    first, rest = schema.arguments[0], schema.arguments[1:]
    if first.alias_info is None or not first.alias_info.is_write:
        return None
    if any(a.alias_info is not None and a.alias_info.is_write for a in rest):
        return None
    if len(schema.returns) != 1 or schema.returns[0].alias_info is None:
        return None
    name = schema.name.split("::")[-1]
    if not name.endswith("_") or name.endswith("__"):
        return None
    packet = getattr(aten, name[:-1], None)
    overload = schema.overload_name or "default"
    if packet is None or overload not in packet.overloads():
        return None
    functional = getattr(packet, overload)
    names = [a.name for a in functional._schema.arguments]
    if functional._schema.is_mutable or names != [a.name for a in schema.arguments]:
        return None
    return functional


def _root(node: fx.Node, inplace: dict) -> fx.Node:
    while node in inplace:
        node = node.args[0]
    return node


def _fresh_value(node) -> bool:
    """An intermediate the graph made itself as a new tensor (not an argument, buffer or
    view), or an element of a new tensor tuple."""
    if not isinstance(node, fx.Node) or node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return _fresh_value(node.args[0]) and isinstance(node.args[0].meta.get("val"), tuple)
    return _fresh(node.target)


def _retraced_anyway(target) -> bool:
    """A composite operator a re-trace writes out whatever the table says: one that may alias
    or write (``flatten``, ``reshape``, ``contiguous``, ``to``), as torch.export decides."""
    return (torch._C._dispatch_has_kernel_for_dispatch_key(target.name(),
                                                            "CompositeImplicitAutograd")
            and not _is_preservable_cia_op(target))


def _flatten_form(node: fx.Node):
    """``flatten`` as the re-trace writes it: a ``view`` to the output shape (the input
    itself when that is its shape), for a contiguous input of static shape; else None."""
    source, out = node.args[0], node.meta.get("val")
    val = source.meta.get("val") if isinstance(source, fx.Node) else None
    if not (isinstance(val, torch.Tensor) and isinstance(out, torch.Tensor)):
        return None
    shape = list(out.shape)
    if not all(isinstance(d, int) for d in (*shape, *val.shape)) or not val.is_contiguous():
        return None
    if shape == list(val.shape):
        return (_SAME, lambda a: a[0])
    return (aten.view.default, lambda a: (a[0], shape))


def _node_form(node: fx.Node, table: dict, lowered: frozenset[str]):
    """``(new target, its arguments from the node's)`` for a node the re-trace rewrites,
    ``()`` for one it keeps, None for one this module cannot rewrite as it does."""
    target, args = node.target, node.args
    if target is operator.getitem:
        return ()
    if not isinstance(target, torch._ops.OpOverload):
        return None  # a higher-order operator, a Python function: re-traced
    if target is _BATCH_NORM:
        if len(args) != 9 or node.kwargs or args[5] is not False or None in args[3:5]:
            return None
        return (aten._native_batch_norm_legit_no_training.default,
                lambda a: (*a[:5], a[6], a[7]))
    if target is _DROPOUT:
        if len(args) != 3 or node.kwargs or args[2] is not False:
            return None
        return (aten.clone.default, lambda a: (a[0],))
    if target is _FLATTEN:
        return _flatten_form(node)
    if target is _DROPOUT_INPLACE:  # eval: the value itself, no node
        eval_mode = len(args) == 3 and not node.kwargs and args[2] is False
        return (_SAME, lambda a: a[0]) if eval_mode else None
    if target._schema.is_mutable:
        functional = _functional(target)
        if functional is None:
            return None
        form = _COMPOSITE_FORMS.get(functional, lambda a: a)
        if functional in _COMPOSITE_FORMS:
            if node.kwargs:
                return None
            functional = _COMPOSITE_TARGETS[functional]
        probe = fx.Graph().create_node("call_function", functional, form(args), node.kwargs)
        if needs_decomposition(probe, table, lowered) or _retraced_anyway(functional):
            return None
        return (functional, form)
    keeps = getattr(table[target], "keeps", None) if target in table else None  # ours,
    if keeps is not None and keeps(node):  # returning NotImplemented for this call
        return ()
    if needs_decomposition(node, table, lowered) or _retraced_anyway(target):
        return None
    return ()


def _plan(program: ExportedProgram, table: dict, lowered: frozenset[str]) -> dict | None:
    """``{node: (new target, its arguments from the node's)}`` for every node the re-trace
    would rewrite, or None when one of them is not one this module rewrites (or writes into a
    value that may be aliased)."""
    signature = program.graph_signature
    if signature.buffers_to_mutate or signature.user_inputs_to_mutate:
        return None
    placeholders = [n.name for n in program.graph.nodes if n.op == "placeholder"]
    if placeholders != [getattr(spec.arg, "name", None) for spec in signature.input_specs]:
        return None  # a deep copy FX renamed (``input`` -> ``input_1``): the re-trace copes
    plan, inplace = {}, {}
    for node in program.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op != "call_function":
            return None  # get_attr (a submodule of a higher-order operator)
        form = _node_form(node, table, lowered)
        if form is None:
            return None
        if form:
            plan[node] = form
            if node.target._schema.is_mutable and node.target is not _DROPOUT_INPLACE:
                inplace[node] = True  # (an eval-mode dropout_ writes nothing)
    if not _unaliased(program.graph, inplace):
        return None
    return plan


def _unaliased(graph: fx.Graph, inplace: dict) -> bool:
    """Every value an in-place node writes is a new intermediate that only pure operators
    (and the in-place chain itself, and the output) read."""
    for node in inplace:
        root = _root(node, inplace)
        if not _fresh_value(root):
            return False
        chain = [root] + [n for n in inplace if _root(n, inplace) is root]
        for member in chain:
            for user in member.users:
                if user in inplace and user.args[0] is member:
                    if any(a is member for a in (*user.args[1:], *user.kwargs.values())):
                        return False  # x.add_(x): reads what it writes
                    continue
                if user in inplace:  # y.add_(x) only reads x
                    continue
                if user.target is _DROPOUT_INPLACE and not any(
                        other.args[0] is member for other in inplace):
                    continue  # an eval dropout_ aliases the value, which is written no more
                if user.op == "output" or (user.op == "call_function" and _fresh(user.target)):
                    continue
                return False
    return True


def _fake_value(target, args, kwargs, fake_mode):
    def value(a):
        return a.meta["val"] if isinstance(a, fx.Node) else a

    with fake_mode:
        return target(*fx.node.map_aggregate(args, value),
                      **fx.node.map_aggregate(kwargs, value))


def _new_node(graph: fx.Graph, old: fx.Node, target, args, kwargs, fake_mode) -> fx.Node:
    with graph.inserting_before(old):
        new = graph.call_function(target, args, kwargs)
    for key in _KEPT_META:
        if key in old.meta:
            new.meta[key] = old.meta[key]
    new.meta["original_aten"] = target if isinstance(target, torch._ops.OpOverload) else \
        old.meta.get("original_aten")
    val = _fake_value(target, args, kwargs, fake_mode)
    new.meta["val"] = val
    if isinstance(val, torch.Tensor):
        new.meta["tensor_meta"] = _extract_tensor_metadata(val)
    return new


def _rewrite(graph: fx.Graph, plan: dict) -> None:
    fake_mode = detect_fake_mode([n.meta.get("val") for n in graph.nodes])
    order = {n: i for i, n in enumerate(graph.nodes)}
    for node, (target, form) in plan.items():
        args = form(node.args)  # as they are now: an argument may have been rewritten
        if target is _SAME:
            node.replace_all_uses_with(args)
            graph.erase_node(node)
            continue
        kwargs = {} if node.target in (_BATCH_NORM, _DROPOUT, _FLATTEN) else dict(node.kwargs)
        new = _new_node(graph, node, target, args, kwargs, fake_mode)
        if target is aten._native_batch_norm_legit_no_training.default:
            with graph.inserting_before(node):
                item = graph.call_function(operator.getitem, (new, 0))
            for key in (*_KEPT_META, "original_aten"):
                if key in new.meta:
                    item.meta[key] = new.meta[key]
            item.meta["val"] = new.meta["val"][0]
            item.meta["tensor_meta"] = _extract_tensor_metadata(item.meta["val"])
            new = item
        if node.target._schema.is_mutable:  # in place: later reads see the result
            written = node.args[0]
            for user in list(written.users):
                if user is not node and order.get(user, -1) > order[node]:
                    user.replace_input_with(written, new)
        node.replace_all_uses_with(new)
        graph.erase_node(node)


def _renamed(graph: fx.Graph, owner: fx.GraphModule) -> fx.Graph:
    """``graph`` with its call nodes named afresh in graph order, by their operator, as a
    re-trace names them (``relu_`` -> ``relu``, the second ``relu`` -> ``relu_1``; an operator
    with n outputs takes n ``getitem`` names, its unused outputs' included); placeholders keep
    their names."""
    names = fx.graph._Namespace()
    outputs: dict[fx.Node, list[str]] = {}
    new = fx.Graph(owning_module=owner, tracer_cls=graph._tracer_cls)
    new._codegen = graph._codegen
    env: dict[fx.Node, fx.Node] = {}
    for node in graph.nodes:
        if node.op == "call_function" and node.target is operator.getitem \
                and node.args[0] in outputs:
            name = outputs[node.args[0]][node.args[1]]
        elif node.op == "call_function":
            packet = getattr(node.target, "overloadpacket", None)
            name = names.create_name(
                packet.__name__ if packet is not None else new._target_to_str(node.target),
                None)
        else:  # placeholders and the output keep their names
            name = node.name
            names.create_name(name, None)
        val = node.meta.get("val")
        if node.op == "call_function" and isinstance(val, (tuple, list)):
            outputs[node] = [names.create_name("getitem", None) for _ in val]
        copy = new.create_node(node.op, node.target,
                               fx.node.map_arg(node.args, env.__getitem__),
                               fx.node.map_arg(node.kwargs, env.__getitem__),
                               name=name, type_expr=node.type)
        if copy.name != name:  # a placeholder FX would rename (``input``): keep the program's
            copy.name = name
        copy.meta = node.meta
        if node.op == "call_function":  # as re-traced: values that need no gradient
            _no_grad_value(copy)
        env[node] = copy
    return new


def _no_grad_value(node: fx.Node) -> None:
    val = node.meta.get("val")
    values = val if isinstance(val, tuple) else (val,)
    if not any(isinstance(v, torch.Tensor) and v.requires_grad for v in values):
        return
    detached = tuple(v.detach() if isinstance(v, torch.Tensor) else v for v in values)
    node.meta["val"] = detached if isinstance(val, tuple) else detached[0]
    if "tensor_meta" in node.meta and isinstance(node.meta["val"], torch.Tensor):
        node.meta["tensor_meta"] = _extract_tensor_metadata(node.meta["val"])


def decompose_locally(program: ExportedProgram, table: dict,
                      lowered: frozenset[str]) -> ExportedProgram | None:
    """What ``program.run_decompositions(table)`` gives, without re-tracing, when every node
    that needs a decomposition is one this module rewrites (module docstring): a new program
    (sharing ``program``'s weights, which stays as it was); else None."""
    plan = _plan(program, table, lowered)
    if plan is None:
        return None
    gm = program.graph_module
    graph = fx.Graph(owning_module=gm, tracer_cls=gm.graph._tracer_cls)
    copies: dict[fx.Node, fx.Node] = {}
    value, output = graph.graph_copy(gm.graph, copies, return_output_node=True)
    graph.output(value).meta = copy.copy(output.meta)
    for old, new in copies.items():  # FX renames a placeholder named like a builtin (input)
        if new.name != old.name:
            new.name = old.name
    _rewrite(graph, {copies[node]: new for node, new in plan.items()})
    module = fx.GraphModule(gm, _renamed(graph, gm))
    module.meta.update(gm.meta)
    signature = copy.deepcopy(program.graph_signature)
    values = module.graph.output_node().args[0]
    for spec, value in zip(signature.output_specs, values, strict=True):
        if isinstance(spec.arg, TensorArgument) and isinstance(value, fx.Node):
            spec.arg = TensorArgument(value.name)
    # As run_decompositions builds its program: the module call graph's names updated, the
    # ATen dialect's verifier (the default).
    return ExportedProgram(
        root=module, graph=module.graph, graph_signature=signature,
        state_dict=dict(program.state_dict), constants=dict(program.constants),
        range_constraints=_get_updated_range_constraints(module, program.range_constraints),
        module_call_graph=_get_updated_module_call_graph(
            gm, program.graph_signature, module, signature, program.module_call_graph),
        example_inputs=program.example_inputs)