"""Indexing in the forms the lowering takes: bool masks, and the write-backs in-place
indexing leaves.

* ``x[mask] = v`` / ``x[:, mask] = v`` (``index_put`` with a bool index) with values that
  broadcast over the masked elements (a number, a row) is ``where(mask, v, x)``: the mask
  may come from the model's inputs, and where's quantization (a fill saturates, it does not
  set the scale) and lowering (SELECT; int32 0/1 arithmetic on Ethos-U55) apply.
* ``x[:, mask]`` with a constant mask (a buffer, a literal) reads the mask's ``nonzero()``
  positions instead: int index tensors, so the output's shape - data-dependent for torch, an
  unbacked size ``u0`` in the exported graph - is static again, and the guards torch.export
  added on ``u0`` go (shapes are re-propagated).

* Functionalising ``x[:, 1::2] += y`` writes the updated slice back a second time:
  ``slice_scatter(z, copy(slice(z, P), slice(z, P)), P)`` with ``z`` the first result. A
  ``copy`` onto a destination of the source's shape and type is the source, and a scatter of
  a tensor's own slice (or select) back into it is the tensor: both go.

* Index tensors apart from each other (``x[a, :, b]``, ``x[i, :, j] = v``) put their
  broadcast shape first in the result (torch's rule), which is indexing ``x`` with its indexed
  dims moved to the front and adjacent: a permute before (and, for a write, the inverse one
  after).

A mask computed at run time with values per masked element has a data-dependent shape: it
stays, and the lowering names it.
"""

from __future__ import annotations

import torch
from torch import fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.export import ExportedProgram
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from pipeline.normalise.constants import add_constant, constant_values, remove_unused_constants

INDEX, INDEX_PUT = "aten.index.Tensor", "aten.index_put.default"


def _bool_index(node: fx.Node) -> tuple[int, fx.Node] | None:
    """(position, mask) of the one bool index of an index/index_put call, if that is all."""
    if node.op != "call_function" or str(node.target) not in (INDEX, INDEX_PUT):
        return None
    given = [(i, a) for i, a in enumerate(node.args[1]) if a is not None]
    if len(given) != 1 or not isinstance(given[0][1], fx.Node):
        return None
    value = given[0][1].meta.get("val")
    return given[0] if isinstance(value, torch.Tensor) and value.dtype == torch.bool else None


def _broadcasts_over_mask(node: fx.Node, position: int, mask: fx.Node) -> bool:
    """index_put values that are the same for every masked element (right-aligned to the dims
    after the mask's)."""
    x, values = node.args[0].meta["val"], node.args[2].meta["val"]
    rest = x.shape[position + mask.meta["val"].dim() :]
    shape = list(values.shape)
    while len(shape) > len(rest) and shape[0] == 1:  # broadcast over the masked elements too
        shape.pop(0)
    return len(shape) <= len(rest) and all(
        v in (1, r) for v, r in zip(reversed(shape), reversed(rest))
    )


_WRITE_BACKS = {
    "aten.slice_scatter.default": ("aten.slice.Tensor", (0, None, None, 1)),
    "aten.select_scatter.default": ("aten.select.int", ()),
}


def _same_value_as(node: fx.Node) -> fx.Node | None:
    """What an identity write returns: a copy's source, a scatter's base."""
    if node.op != "call_function":
        return None
    name = str(node.target)
    if name == "aten.copy.default":
        dst, src = (a.meta.get("val") for a in node.args[:2])
        same = src is not None and (dst.shape, dst.dtype) == (src.shape, src.dtype)
        return node.args[1] if same else None
    if name not in _WRITE_BACKS:
        return None
    read, defaults = _WRITE_BACKS[name]
    base, src, params = node.args[0], node.args[1], list(node.args[2:])
    if not (isinstance(src, fx.Node) and str(src.target) == read and src.args[0] is base):
        return None
    written, read_back = (p + list(defaults[len(p) :]) for p in (params, list(src.args[1:])))
    return base if written == read_back else None


def _apart(node: fx.Node) -> list[int] | None:
    """The positions of an index/index_put call's integer index tensors when they are not
    adjacent, else None."""
    if node.op != "call_function" or str(node.target) not in (INDEX, INDEX_PUT):
        return None
    given = [i for i, a in enumerate(node.args[1]) if a is not None]
    if not given or given == list(range(given[0], given[-1] + 1)):
        return None
    indices = [node.args[1][i] for i in given]
    if not all(isinstance(i, fx.Node) and i.meta["val"].dtype != torch.bool for i in indices):
        return None
    return given


def _as_adjacent(gm: fx.GraphModule, node: fx.Node, given: list[int]) -> None:
    x = node.args[0]
    rank = x.meta["val"].dim()
    order = given + [d for d in range(rank) if d not in given]
    indices = [node.args[1][i] for i in given]
    permute = torch.ops.aten.permute.default
    with gm.graph.inserting_before(node):
        moved = gm.graph.call_function(permute, (x, order))
        moved.meta["val"] = x.meta["val"].permute(order)
        new = [moved]
        if str(node.target) == INDEX:
            result = gm.graph.call_function(node.target, (moved, indices))
        else:
            put = gm.graph.call_function(node.target, (moved, indices, *node.args[2:]))
            put.meta["val"] = moved.meta["val"]
            inverse = sorted(range(rank), key=order.__getitem__)
            result = gm.graph.call_function(permute, (put, inverse))
            new.append(put)
    result.meta["val"] = node.meta["val"]
    for created in (*new, result):
        created.meta["stack_trace"] = node.meta.get("stack_trace")
    node.replace_all_uses_with(result)
    gm.graph.erase_node(node)


def _constant_masks(node: fx.Node, consts: dict) -> list[int]:
    """Positions of the bool indices of an index/index_put call with several index tensors,
    when every bool one is a constant (its ``nonzero()`` positions then pair with the others
    as torch pairs them)."""
    if node.op != "call_function" or str(node.target) not in (INDEX, INDEX_PUT):
        return []
    given = [(i, a) for i, a in enumerate(node.args[1]) if isinstance(a, fx.Node)]
    masks = [(i, a) for i, a in given if a.meta["val"].dtype == torch.bool]
    if len(given) < 2 or not masks or any(a.name not in consts for _, a in masks):
        return []
    return [i for i, _ in masks]


def needs_rewrite(node: fx.Node, consts: dict) -> bool:
    if _same_value_as(node) is not None or _apart(node) is not None:
        return True
    if _constant_masks(node, consts):
        return True
    found = _bool_index(node)
    if found is None or (len(node.args) > 3 and node.args[3]):  # accumulate
        return False
    position, mask = found
    if str(node.target) == INDEX_PUT and _broadcasts_over_mask(node, position, mask):
        return True
    return mask.name in consts


def _as_where(gm: fx.GraphModule, node: fx.Node, position: int, mask: fx.Node) -> None:
    x = node.args[0]
    rank, mask_rank = x.meta["val"].dim(), mask.meta["val"].dim()
    shape = [1] * position + list(mask.meta["val"].shape) + [1] * (rank - position - mask_rank)
    with gm.graph.inserting_before(node):
        view = gm.graph.call_function(torch.ops.aten.reshape.default, (mask, shape))
        where = gm.graph.call_function(torch.ops.aten.where.self, (view, node.args[2], x))
    view.meta["val"] = torch.ops.aten.reshape.default(mask.meta["val"], shape)
    where.meta["val"] = torch.ops.aten.where.self(
        view.meta["val"], node.args[2].meta["val"], x.meta["val"]
    )
    for new in (view, where):
        new.meta["stack_trace"] = node.meta.get("stack_trace")
    node.replace_all_uses_with(where)
    gm.graph.erase_node(node)


def _as_positions(program, node: fx.Node, position: int, mask: fx.Node, value) -> None:
    positions = [
        add_constant(program, f"{mask.name}_positions", p) for p in value.nonzero(as_tuple=True)
    ]
    indices = list(node.args[1])
    indices[position : position + 1] = positions
    node.args = (node.args[0], indices, *node.args[2:])


def rewrite_indexing(program: ExportedProgram) -> int:
    """Rewrite every node that ``needs_rewrite``; returns how many."""
    consts = constant_values(program)
    gm = program.graph_module
    rewritten, dynamic = 0, False
    for node in list(gm.graph.nodes):
        if not needs_rewrite(node, consts):
            continue
        same = _same_value_as(node)
        if same is not None:
            node.replace_all_uses_with(same)
            gm.graph.erase_node(node)
            rewritten += 1
            continue
        masks = _constant_masks(node, consts)
        if masks:
            for position in reversed(masks):  # a k-dim mask becomes k index tensors
                mask = node.args[1][position]
                _as_positions(program, node, position, mask, consts[mask.name])
            dynamic, rewritten = True, rewritten + 1
            continue
        given = _apart(node)
        if given is not None:
            _as_adjacent(gm, node, given)
            rewritten += 1
            continue
        position, mask = _bool_index(node)
        if str(node.target) == INDEX_PUT and _broadcasts_over_mask(node, position, mask):
            _as_where(gm, node, position, mask)
        else:
            _as_positions(program, node, position, mask, consts[mask.name])
            dynamic = True
        rewritten += 1
    if dynamic:
        _make_static(program)
    if rewritten:
        gm.graph.eliminate_dead_code()
        remove_unused_constants(program)
    return rewritten


def _make_static(program: ExportedProgram) -> None:
    """Re-propagate shapes (static now) and drop the guards on the sizes that were not."""
    gm = program.graph_module
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    consts = constant_values(program)
    inputs = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            value = consts.get(node.name)
            if value is None:
                val = node.meta["val"]
                value = torch.zeros(tuple(int(d) for d in val.shape), dtype=val.dtype)
            inputs.append(mode.from_tensor(value, static_shapes=True))
    for node in list(gm.graph.nodes):
        node.meta.pop("unbacked_bindings", None)
        if str(node.target) == "aten._assert_scalar.default":
            gm.graph.erase_node(node)
    gm.graph.eliminate_dead_code()
    FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*inputs)
    program._range_constraints = {}
