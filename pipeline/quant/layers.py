"""The conv/linear layers of a float GraphModule whose weights are constants it alone reads,
as the post-training rewrites (``equalise.py``, ``bias_correction.py``) see them.

A rewrite replaces a weight or bias attribute by a new tensor, never writes into the old one:
the module from ``ExportedProgram.module()`` shares its tensors with the program's state.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import fx

from pipeline.fx import call_arguments

CONVOLUTIONS = (
    "aten.conv1d.default",
    "aten.conv1d.padding",
    "aten.conv2d.default",
    "aten.conv2d.padding",
)
LINEAR = "aten.linear.default"


@dataclass(frozen=True)
class Layer:
    """A conv/linear node with constant weights [out, in / groups, *kernel]."""

    node: fx.Node
    weight: str  # attribute path (get_attr target)
    bias: str | None
    groups: int

    @property
    def channel_axis(self) -> int:
        """The axis of the output's channels: 1 for a convolution, the last for a linear."""
        return -1 if str(self.node.target) == LINEAR else 1


def _constant(node, module: fx.GraphModule, shared: set[str]) -> str | None:
    """The attribute path of a get_attr float tensor read by no other node, or None."""
    if not (isinstance(node, fx.Node) and node.op == "get_attr" and len(node.users) == 1):
        return None
    if node.target in shared:
        return None
    value = get_tensor(module, node.target)
    return node.target if isinstance(value, torch.Tensor) and value.is_floating_point() else None


def find_layers(module: fx.GraphModule) -> dict[fx.Node, Layer]:
    """Every conv/linear of ``module`` whose weight (and bias, if any) are its own constants."""
    targets = [n.target for n in module.graph.nodes if n.op == "get_attr"]
    shared = {t for t in targets if targets.count(t) > 1}
    layers = {}
    for node in module.graph.nodes:
        if node.op != "call_function" or str(node.target) not in (*CONVOLUTIONS, LINEAR):
            continue
        arguments = call_arguments(node)
        weight = _constant(arguments["weight"], module, shared)
        bias = arguments["bias"]
        bias_target = None if bias is None else _constant(bias, module, shared)
        if weight is None or (bias is not None and bias_target is None):
            continue
        groups = int(arguments.get("groups") or 1)
        layers[node] = Layer(node, weight, bias_target, groups)
    return layers


def get_tensor(module: torch.nn.Module, target: str):
    owner, _, name = target.rpartition(".")
    return getattr(module.get_submodule(owner) if owner else module, name)


def set_tensor(module: torch.nn.Module, target: str, value: torch.Tensor) -> None:
    """Point ``target`` at a new tensor (a parameter stays a parameter, a buffer a buffer)."""
    owner_path, _, name = target.rpartition(".")
    owner = module.get_submodule(owner_path) if owner_path else module
    old = getattr(owner, name)
    value = value.to(old.dtype).detach()
    if isinstance(old, torch.nn.Parameter):
        setattr(owner, name, torch.nn.Parameter(value, requires_grad=False))
    elif name in owner._buffers:
        owner._buffers[name] = value
    else:
        setattr(owner, name, value)


def add_bias(module: fx.GraphModule, layer: Layer) -> Layer:
    """``layer`` with a zero bias of its own (a new attribute and get_attr node)."""
    weight = get_tensor(module, layer.weight)
    target = f"_ptq_bias_{layer.node.name}"
    module.register_buffer(target, torch.zeros(weight.shape[0], dtype=weight.dtype))
    with module.graph.inserting_before(layer.node):
        bias = module.graph.get_attr(target)
    bias.meta["val"] = get_tensor(module, target)
    args = list(layer.node.args)
    if len(args) < 3:
        args.append(bias)
    else:
        args[2] = bias
    layer.node.args = tuple(args)
    return Layer(layer.node, layer.weight, target, layer.groups)
