"""Constant folding on an ExportedProgram: a call whose inputs are all constants (parameters,
buffers, lifted constants, literals) is evaluated once and replaced by a new lifted constant.

New constants are lifted tensor constants of the program (placeholder + ``CONSTANT_TENSOR``
input spec + ``program.constants``), so the program stays a valid ExportedProgram that
``torch.export.save`` writes and ``module()`` runs.
"""

from __future__ import annotations

import operator

import torch
from torch import fx
from torch._guards import detect_fake_mode
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, InputSpec, TensorArgument

# Folding must not blow a small expression up into a huge constant (an ``expand`` of a
# scalar to a big activation shape costs flash for nothing): past this many elements the
# expression stays in the graph.
MAX_FOLDED_ELEMENTS = 1 << 20


def constant_values(program: ExportedProgram) -> dict[str, torch.Tensor]:
    """Placeholder name -> tensor for every parameter, buffer and lifted constant."""
    signature = program.graph_signature
    sources = {
        **signature.inputs_to_parameters,
        **signature.inputs_to_buffers,
        **signature.inputs_to_lifted_tensor_constants,
    }
    values = {**program.state_dict, **program.constants}
    return {name: values[target] for name, target in sources.items() if target in values}


# Operators whose result depends on their tensor argument's shape and dtype only, never its
# values (shapes are static here): foldable whatever that argument is.
SHAPE_ONLY = ("aten.zeros_like.default", "aten.ones_like.default", "aten.full_like.default",
              "aten.empty_like.default", "aten.scalar_tensor.default")


def _is_const_arg(arg, consts: dict) -> bool:
    nodes: list[fx.Node] = []
    fx.node.map_arg(arg, nodes.append)
    return all(n.name in consts for n in nodes)


def _value(node: fx.Node, consts: dict) -> torch.Tensor:
    """A constant's value, or for a shape-only operand a tensor of its shape and dtype."""
    if node.name in consts:
        return consts[node.name]
    val = node.meta["val"]
    return torch.zeros(tuple(val.shape), dtype=val.dtype)


def foldable(program: ExportedProgram, node: fx.Node, consts: dict | None = None) -> bool:
    """A deterministic call computed from constants alone, with a small tensor result."""
    if node.op != "call_function" or node.target is operator.getitem:
        return False
    tags = getattr(node.target, "tags", ())
    if torch.Tag.nondeterministic_seeded in tags:
        return False
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or val.numel() > MAX_FOLDED_ELEMENTS:
        return False
    if str(node.target) in SHAPE_ONLY:
        return True
    if consts is None:
        consts = {n: None for n in constant_values(program)}
    return _is_const_arg((node.args, node.kwargs), consts)


def add_constant(program: ExportedProgram, name: str, value: torch.Tensor) -> fx.Node:
    """A new lifted constant placeholder holding ``value`` (inserted before the user inputs)."""
    value = value.detach().contiguous()
    graph = program.graph_module.graph
    signature = program.graph_signature
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    index = next(
        (i for i, s in enumerate(signature.input_specs) if s.kind == InputKind.USER_INPUT),
        len(signature.input_specs),
    )
    anchor = placeholders[index] if index < len(placeholders) else None
    with graph.inserting_before(anchor) if anchor else graph.inserting_after(placeholders[-1]):
        node = graph.placeholder(_unique(program, name))
    target = f"_normalised_{node.name}"
    program.constants[target] = value
    signature.input_specs.insert(
        index, InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(node.name), target)
    )
    fake_mode = detect_fake_mode([n.meta.get("val") for n in placeholders])
    node.meta["val"] = fake_mode.from_tensor(value, static_shapes=True) if fake_mode else value
    return node


def _unique(program: ExportedProgram, name: str) -> str:
    taken = {n.name for n in program.graph.nodes}
    candidate, i = name, 1
    while candidate in taken:
        candidate, i = f"{name}_{i}", i + 1
    return candidate


def fold_constants(program: ExportedProgram) -> int:
    """Fold every foldable call (in graph order, so chains fold whole); returns how many."""
    consts = constant_values(program)
    graph = program.graph_module.graph
    folded = 0
    for node in list(graph.nodes):
        if not node.users or not foldable(program, node, consts):
            continue
        args, kwargs = fx.node.map_arg((node.args, node.kwargs), lambda n: _value(n, consts))
        with torch.no_grad():
            value = node.target(*args, **kwargs)
        if not isinstance(value, torch.Tensor):
            continue
        replacement = add_constant(program, f"{node.name}_folded", value.detach().clone())
        replacement.meta["stack_trace"] = node.meta.get("stack_trace")
        consts[replacement.name] = value
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
        folded += 1
    remove_unused_constants(program)
    return folded


def remove_unused_constants(program: ExportedProgram) -> None:
    """Drop lifted constants (not parameters/buffers) that nothing reads any more."""
    signature = program.graph_signature
    for node in list(program.graph.nodes):
        if node.op != "placeholder" or node.users:
            continue
        spec = next((s for s in signature.input_specs if s.arg.name == node.name), None)
        if spec is None or spec.kind != InputKind.CONSTANT_TENSOR:
            continue
        signature.input_specs.remove(spec)
        if not any(s.target == spec.target for s in signature.input_specs):
            program.constants.pop(spec.target, None)
        program.graph.erase_node(node)
