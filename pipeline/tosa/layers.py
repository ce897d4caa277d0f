"""The layer map: which tensor of the finished TOSA graph holds each quantized value of the q/dq
program, so verify can compare every layer on its own (``pipeline/verify/layers.py``).

A quantized value is the output of a ``quantize`` node of the program (node names are the
program's own: verify loads the same file). The FX passes erase those nodes: ``fold_qdq``
gives their qparams to the producer (or to a ``tosa.rescale`` marker that copies the quantize
node's meta), ``fuse_activation`` folds a relu into the producer before it. So every node is
tagged with its own name before the passes (``meta`` copies carry the tag), and afterwards
each lowered value is traced forward through the nodes the passes erased to the quantize
node it now stands for. A value whose tensor the TOSA passes removed is found in the tensor
it reshaped or copied; failing that it has no entry, and its layer is checked together with
the next one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import fx

from pipeline.tosa.context import LoweringContext, dim_order, torch_shape, tosa_shape
from pipeline.tosa.emit.common import same_quantization
from pipeline.tosa.graph import TosaGraph
from pipeline.tosa.passes.fold_qdq_pass import qparams_of
from pipeline.tosa.quant_math import QParams

ORIGIN = "layer_origin"  # node meta: the name of the program node this value comes from
_QUANTIZE = (
    "quantized_decomposed.quantize_per_tensor.default",
    "quantized_decomposed.quantize_per_tensor.tensor",
)


@dataclass(frozen=True)
class Origins:
    quantized: dict[str, tuple[QParams, tuple[int, ...]]]  # quantize node -> qparams, shape
    users: dict[str, list[str]]


def mark_origins(gm: fx.GraphModule, where: str = "") -> Origins:
    """Before the FX passes: tag every node with its name; remember users and quantizations."""
    quantized = {}
    for node in gm.graph.nodes:
        node.meta[ORIGIN] = node.name
        if node.op == "call_function" and str(node.target) in _QUANTIZE:
            quantized[node.name] = (qparams_of(node, where), torch_shape(node))
    users = {node.name: [user.name for user in node.users] for node in gm.graph.nodes}
    return Origins(quantized, users)


def _quantize_nodes(node: fx.Node, origins: Origins, alive: set[str]) -> list[str]:
    """The quantize nodes whose value ``node`` holds: its own users', or those of the node it
    replaced (followed through single users the passes erased)."""
    name, seen = node.meta.get(ORIGIN), set()
    while name is not None and name not in seen:
        seen.add(name)
        if name in origins.quantized:  # a marker carrying its quantize node's meta
            return [name]
        users = origins.users.get(name, [])
        found = [user for user in users if user in origins.quantized]
        if found or len(users) != 1 or users[0] in alive:
            return found
        name = users[0]
    return []


def value_sources(graph: TosaGraph) -> dict[str, str]:
    """Before the TOSA passes: tensor -> the tensor it only reshapes or copies. When a pass
    removes a layer's own tensor (``remove_reshape_chains`` between two linears), its values
    are still in that one, in the same element order."""
    return {
        op.outputs[0]: op.inputs[0] for op in graph.operators if op.op in ("RESHAPE", "IDENTITY")
    }


def _surviving(ctx: LoweringContext, name: str, sources: dict[str, str]) -> str | None:
    while name not in ctx.graph.tensors and name in sources:
        name = sources[name]
    tensor = ctx.graph.tensors.get(name)
    return None if tensor is None or tensor.is_const else name


def layer_map(
    gm: fx.GraphModule, ctx: LoweringContext, origins: Origins, sources: dict[str, str]
) -> list[dict]:
    """After the TOSA passes: ``{"node", "tensor", "shape", "dim_order"}`` per quantize node
    of the program whose values a tensor of the final graph holds, in program order
    (``shape``: the value's TOSA shape, which ``tensor`` has or reshapes)."""
    alive = {node.name for node in gm.graph.nodes}
    claims: dict[str, tuple[fx.Node, str]] = {}
    for node, name in ctx.tensors.items():
        qparams = ctx.qparams(node)
        if node.name not in alive or qparams is None:
            continue
        tensor = _surviving(ctx, name, sources)
        size = math.prod(tosa_shape(node))
        if tensor is None or math.prod(ctx.graph.tensors[tensor].shape) != size:
            continue
        for quantize in _quantize_nodes(node, origins, alive):
            expected, shape = origins.quantized[quantize]
            if same_quantization(expected, qparams) and shape == torch_shape(node):
                claims[quantize] = (node, tensor)  # the last in graph order (split_permutes)
    return [
        {"node": q, "tensor": claims[q][1], "shape": list(tosa_shape(claims[q][0])),
         "dim_order": list(dim_order(claims[q][0]))}
        for q in origins.quantized
        if q in claims
    ]  # fmt: skip
