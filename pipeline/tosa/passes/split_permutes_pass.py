"""Select/slice before a permute, not after: ``select(permute(x, p), d, i)`` becomes
``permute(select(x, p[d], i), p')``, with ``p'`` = ``p`` without ``d``, renumbered.

Attention code splits q/k/v with ``qkv.reshape(b, t, 3, h, e).permute(2, 0, 3, 1, 4)`` and
unbinds dim 0 (export writes the unbind as selects). Lowered as written, that is one rank-5
TRANSPOSE of the whole qkv tensor, which Vela splits into many small NPU transposes; picking
each piece first leaves one lower-rank transpose per piece, and none (or a RESHAPE) where a
piece's permutation only moves size-1 dims. A slice along ``d`` becomes a slice along
``p[d]`` under the same permutation.

Only a permute every user of which selects/slices the same dim, at least one of them a
select, is rewritten: with another user the whole transpose would still be needed, and
slices alone keep the rank, so they would only trade one transpose for several. Selects, slices and permutes only move integers, so
each new node carries the qparams (and the rest of the meta) of the user it replaces; the
rewrite is skipped unless the input, the permute and its users are quantized alike.
"""

from __future__ import annotations

import torch
from torch import fx

from pipeline.tosa.emit.common import same_quantization
from pipeline.tosa.ops.op_permute import torch_permutation
from pipeline.tosa.passes.context import PassContext

_PERMUTES = ("aten.permute.default", "aten.transpose.int")
_SELECT, _SLICE = "aten.select.int", "aten.slice.Tensor"
_aten = torch.ops.aten


def _rank(node) -> int | None:
    value = node.meta.get("val") if isinstance(node, fx.Node) else None
    return value.dim() if isinstance(value, torch.Tensor) else None


def _picked_dim(user: fx.Node, permute: fx.Node, rank: int) -> int | None:
    """The permuted tensor's dim ``user`` selects/slices, or None if it is anything else."""
    target = str(user.target)
    if user.op != "call_function" or target not in (_SELECT, _SLICE) or user.kwargs:
        return None
    if user.args[0] is not permute or permute in user.args[1:]:
        return None
    dim = user.args[1] if len(user.args) > 1 else 0
    return int(dim) % rank


def _same_quantization(nodes) -> bool:
    first = nodes[0].meta.get("qparams")
    return all(same_quantization(first, n.meta.get("qparams")) for n in nodes[1:])


def _rewritable(permute: fx.Node) -> tuple[list[int], int] | None:
    """``(perm, d)`` when every user of ``permute`` selects/slices its dim ``d``."""
    rank, source = _rank(permute), permute.args[0]
    users = list(permute.users)
    if rank is None or _rank(source) != rank or not users:
        return None
    dims = {_picked_dim(user, permute, rank) for user in users}
    if len(dims) != 1 or None in dims:
        return None
    if not any(str(user.target) == _SELECT for user in users):
        return None  # slices keep the rank: n transposes of the same rank for one
    if not _same_quantization([source, permute, *users]):
        return None
    return torch_permutation(permute), dims.pop()


def _split(gm: fx.GraphModule, permute: fx.Node, perm: list[int], d: int) -> None:
    source, axis = permute.args[0], perm[d]
    for user in list(permute.users):
        if str(user.target) == _SELECT:
            target = _aten.select.int
            rest = [p - (p > axis) for j, p in enumerate(perm) if j != d]
        else:
            target = _aten.slice.Tensor
            rest = list(perm)
        args = (source, axis, *user.args[2:])
        with gm.graph.inserting_before(user):
            piece = gm.graph.call_function(target, args)
            piece.meta.update(user.meta)
            piece.meta["val"] = target(source.meta["val"], *args[1:])
            result = piece
            if rest != sorted(rest):
                result = gm.graph.call_function(_aten.permute.default, (piece, rest))
                result.meta.update(user.meta)
                result.meta["val"] = piece.meta["val"].permute(rest)
        user.replace_all_uses_with(result)
        gm.graph.erase_node(user)
    gm.graph.erase_node(permute)


def run(gm: fx.GraphModule, ctx: PassContext) -> None:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or str(node.target) not in _PERMUTES:
            continue
        found = _rewritable(node)
        if found is not None:
            _split(gm, node, *found)
    gm.graph.lint()
