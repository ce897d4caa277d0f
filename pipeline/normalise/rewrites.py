"""Graph rewrites of the normalisation that torch's decompositions do not do: no-ops out, and
inference BatchNorm either folded into the conv/linear before it or written as MUL + ADD."""

from __future__ import annotations

import operator

import torch
from torch import fx
from torch.export import ExportedProgram

from pipeline.normalise.constants import add_constant, constant_values

# Calls that return their first argument's value unchanged (in an inference graph).
NOOPS = (
    "aten.clone.default",
    "aten.alias.default",
    "aten.detach.default",
    "aten.detach_copy.default",
    "aten.lift_fresh_copy.default",
    "aten.dropout.default",
    "aten.feature_dropout.default",
    "aten.alpha_dropout.default",
    "aten._assert_tensor_metadata.default",
)
# Calls that are no-ops when their result has the input's shape and dtype.
_SAME_SHAPE_NOOPS = (
    "aten._to_copy.default",
    "aten.expand.default",
    "aten.reshape.default",
    "aten.slice.Tensor",
    "aten.repeat.default",
    "aten.contiguous.default",
)
# Views that need a contiguous input (torch.export puts a clone before them, removed here).
VIEWS = ("aten.view.default", "aten._unsafe_view.default")
BATCH_NORM = "aten._native_batch_norm_legit_no_training.default"
_FOLDS_INTO = {"aten.conv2d.default": 0, "aten.conv1d.default": 0, "aten.linear.default": 0}


def _same_value(node: fx.Node) -> bool:
    source = node.args[0] if node.args else None
    if not isinstance(source, fx.Node):
        return False
    a, b = node.meta.get("val"), source.meta.get("val")
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return False
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if str(node.target) == "aten.slice.Tensor":  # a full slice with step 1
        return len(node.args) < 5 or node.args[4] == 1
    return True


def remove_noops(gm: fx.GraphModule) -> int:
    """Bypass and erase every no-op call; returns how many.

    A ``view`` becomes a ``reshape`` first: with the ``clone``/``contiguous`` before it gone,
    a view of a transposed tensor would fail where the reshape copies (same values)."""
    removed = 0
    for node in list(gm.graph.nodes):
        name = str(node.target) if node.op == "call_function" else ""
        if name in VIEWS:
            node.target = torch.ops.aten.reshape.default
            name = "aten.reshape.default"
        if name == "aten._assert_tensor_metadata.default":
            gm.graph.erase_node(node)
        elif name in NOOPS or (name in _SAME_SHAPE_NOOPS and _same_value(node)):
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
        else:
            continue
        removed += 1
    return removed


def _values_of(reduction):
    """``max(x, dim, keepdim)`` / ``min(...)``'s values -> ``amax(x, [dim], keepdim)``."""
    return lambda x, dim, keepdim=False: (reduction, (x, [dim], keepdim), {})


# Multi-output operators whose first output alone has a single-output form (max_pool1d and
# adaptive max pools decompose into the ``_with_indices`` forms; the indices are rarely used):
# (args, kwargs) -> (that form, its args, its kwargs).
FIRST_OUTPUT_FORMS = {
    "aten.max_pool2d_with_indices.default": lambda *args, **kwargs: (
        torch.ops.aten.max_pool2d.default,
        args,
        kwargs,
    ),
    "aten.max.dim": _values_of(torch.ops.aten.amax.default),
    "aten.min.dim": _values_of(torch.ops.aten.amin.default),
}


# Multi-output operators whose second output (the indices) has a single-output form: both
# take the first of equal values, as torch's max/min over a dim do.
INDEX_FORMS = {
    "aten.max.dim": torch.ops.aten.argmax.default,
    "aten.min.dim": torch.ops.aten.argmin.default,
}


def split_indices(gm: fx.GraphModule) -> int:
    """``max(x, dim)[1]`` / ``min(x, dim)[1]`` -> ``argmax(x, dim, keepdim)`` / ``argmin``;
    the values are then the only output read (``drop_unused_indices``). Returns how many."""
    split = 0
    for node in list(gm.graph.nodes):
        form = INDEX_FORMS.get(str(node.target)) if node.op == "call_function" else None
        users = [u for u in node.users if u.target is operator.getitem and u.args[1] == 1]
        if form is None or not users:
            continue
        x, dim = node.args[:2]
        keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        with gm.graph.inserting_before(node):
            found = gm.graph.call_function(form, (x, dim, keepdim))
        found.meta.update({k: v for k, v in node.meta.items() if k != "val"})
        found.meta["val"] = node.meta["val"][1]
        for user in users:
            user.replace_all_uses_with(found)
            gm.graph.erase_node(user)
        split += 1
    return split


def drop_unused_indices(gm: fx.GraphModule) -> int:
    """``op_with_indices(...)[0]`` with the indices unused -> the single-output op."""
    rewritten = 0
    for node in list(gm.graph.nodes):
        form = FIRST_OUTPUT_FORMS.get(str(node.target)) if node.op == "call_function" else None
        if form is None:
            continue
        users = list(node.users)
        if not all(u.target is operator.getitem and u.args[1] == 0 for u in users):
            continue
        single, args, kwargs = form(*node.args, **node.kwargs)
        with gm.graph.inserting_before(node):
            replacement = gm.graph.call_function(single, tuple(args), kwargs)
        replacement.meta.update({k: v for k, v in node.meta.items() if k != "val"})
        replacement.meta["val"] = node.meta["val"][0]
        for user in users:
            user.replace_all_uses_with(replacement)
            gm.graph.erase_node(user)
        gm.graph.erase_node(node)
        rewritten += 1
    return rewritten


# 2-D pools that also take an unbatched (C, H, W) input; the lowering pools NHWC tensors.
POOLS_2D = (
    "aten.max_pool2d.default",
    "aten.avg_pool2d.default",
    "aten.adaptive_avg_pool2d.default",
    "aten.adaptive_max_pool2d.default",
)


def unbatched_pools(gm: fx.GraphModule) -> list[fx.Node]:
    return [
        n for n in gm.graph.nodes
        if n.op == "call_function" and str(n.target) in POOLS_2D
        and isinstance(n.args[0], fx.Node) and n.args[0].meta["val"].dim() == 3
    ]  # fmt: skip


def batch_unbatched_pools(gm: fx.GraphModule) -> int:
    """A pool of a (C, H, W) tensor -> reshape to (1, C, H, W), pool, reshape back."""
    pools = unbatched_pools(gm)
    for pool in pools:
        x = pool.args[0]
        kept = {k: v for k, v in pool.meta.items() if k in ("stack_trace", "nn_module_stack")}
        with gm.graph.inserting_before(pool):
            batched = gm.graph.call_function(
                torch.ops.aten.reshape.default, (x, [1, *x.meta["val"].shape])
            )
        batched.meta.update(kept, val=x.meta["val"].unsqueeze(0))
        pool.replace_input_with(x, batched)
        value = pool.meta["val"]
        first = value[0] if isinstance(value, (tuple, list)) else value
        with gm.graph.inserting_after(pool):
            unbatched = gm.graph.call_function(
                torch.ops.aten.reshape.default, (pool, list(first.shape))
            )
        unbatched.meta.update(kept, val=first)
        pool.replace_all_uses_with(unbatched, delete_user_cb=lambda user: user is not unbatched)
        pool.meta["val"] = first.unsqueeze(0)
    return len(pools)


def _output(bn: fx.Node) -> fx.Node | None:
    """The getitem(bn, 0) that carries the normalised tensor (the others are unused)."""
    users = [u for u in bn.users if u.target is operator.getitem and u.args[1] == 0]
    return users[0] if len(users) == 1 else None


def batchnorms(gm: fx.GraphModule) -> list[fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and str(n.target) == BATCH_NORM]


def _scale_shift(bn: fx.Node, consts: dict) -> tuple[torch.Tensor, torch.Tensor] | None:
    _, weight, bias, mean, var, _, eps = bn.args[:7]
    values = [consts.get(a.name) if isinstance(a, fx.Node) else None for a in (mean, var)]
    if any(v is None for v in values):
        return None
    mean, var = (v.double() for v in values)
    gamma = (
        consts.get(weight.name).double() if isinstance(weight, fx.Node) else torch.ones_like(mean)
    )
    beta = consts.get(bias.name).double() if isinstance(bias, fx.Node) else torch.zeros_like(mean)
    scale = gamma / torch.sqrt(var + float(eps))
    return scale, beta - mean * scale


def _foldable_producer(bn: fx.Node, consts: dict) -> fx.Node | None:
    producer = bn.args[0]
    if not (isinstance(producer, fx.Node) and str(producer.target) in _FOLDS_INTO):
        return None
    if len(producer.users) != 1 or producer.args[1].name not in consts:
        return None
    bias = producer.args[2] if len(producer.args) > 2 else None
    if bias is not None and (not isinstance(bias, fx.Node) or bias.name not in consts):
        return None
    if str(producer.target) == "aten.linear.default" and producer.meta["val"].dim() != 2:
        return None  # BatchNorm1d of [N, C, L] normalises C, not the linear's features L
    return producer


def _fold(program: ExportedProgram, producer: fx.Node, scale, shift, consts: dict) -> None:
    weight = consts[producer.args[1].name].double()
    bias_arg = producer.args[2] if len(producer.args) > 2 else None
    bias = consts[bias_arg.name].double() if bias_arg is not None else torch.zeros_like(scale)
    folded_w = (weight * scale.reshape(-1, *[1] * (weight.dim() - 1))).float()
    new_w = add_constant(program, f"{producer.name}_weight_bn", folded_w)
    new_b = add_constant(program, f"{producer.name}_bias_bn", (bias * scale + shift).float())
    args = list(producer.args) + [None] * max(0, 3 - len(producer.args))
    args[1], args[2] = new_w, new_b
    producer.args = tuple(args)


def _mul_add(program: ExportedProgram, bn: fx.Node, out: fx.Node, scale, shift) -> fx.Node:
    x = bn.args[0]
    rank = x.meta["val"].dim()
    shape = (-1,) if rank <= 2 else (-1, *[1] * (rank - 2))
    scale_c = add_constant(program, f"{bn.name}_scale", scale.float().reshape(shape))
    shift_c = add_constant(program, f"{bn.name}_shift", shift.float().reshape(shape))
    graph = program.graph_module.graph
    with graph.inserting_before(bn):
        mul = graph.call_function(torch.ops.aten.mul.Tensor, (x, scale_c))
        add = graph.call_function(torch.ops.aten.add.Tensor, (mul, shift_c))
    for node in (mul, add):
        node.meta.update(
            val=out.meta["val"],
            stack_trace=bn.meta.get("stack_trace"),
            nn_module_stack=bn.meta.get("nn_module_stack"),
        )
    return add


def rewrite_batchnorms(program: ExportedProgram) -> None:
    """Each inference BatchNorm: folded into a conv/linear it alone reads, else MUL + ADD by
    per-channel constants. One whose statistics are not constants is left alone."""
    gm = program.graph_module
    consts = constant_values(program)
    for bn in batchnorms(gm):
        out, params = _output(bn), _scale_shift(bn, consts)
        if out is None or params is None:
            continue
        producer = _foldable_producer(bn, consts)
        if producer is not None:
            _fold(program, producer, *params, consts)
            replacement = producer
        else:
            replacement = _mul_add(program, bn, out, *params)
        out.replace_all_uses_with(replacement)
        gm.graph.erase_node(out)
        for user in list(bn.users):
            gm.graph.erase_node(user)
        gm.graph.erase_node(bn)


def _linear_addmm(node: fx.Node, consts: dict) -> bool:
    """addmm that is a linear layer as it stands: ``bias + x @ W`` with a constant [in, out]
    ``W``, a constant [out] bias, alpha = beta = 1 (``op_mm.py`` lowers it as one)."""
    bias, _, weight = node.args[:3]
    if node.kwargs.get("alpha", 1) != 1 or node.kwargs.get("beta", 1) != 1:
        return False
    if not all(isinstance(n, fx.Node) and n.name in consts for n in (bias, weight)):
        return False
    return consts[bias.name].dim() == 1 and consts[weight.name].dim() == 2


def written_out_addmms(gm: fx.GraphModule, consts: dict) -> list[fx.Node]:
    return [
        n for n in gm.graph.nodes
        if n.op == "call_function" and str(n.target) == "aten.addmm.default"
        and not _linear_addmm(n, consts)
    ]  # fmt: skip


def write_out_addmms(gm: fx.GraphModule, consts: dict) -> int:
    """``addmm(bias, a, b, beta=, alpha=)`` that is no linear layer (``b`` computed, as in
    attention written by hand, or alpha / beta other than 1) -> ``beta * bias + alpha * (a @
    b)`` in operators of their own; beta = 0 drops the bias, as torch does (even a NaN)."""
    nodes = written_out_addmms(gm, consts)
    aten = torch.ops.aten
    for node in nodes:
        bias, a, b = node.args[:3]
        alpha, beta = node.kwargs.get("alpha", 1), node.kwargs.get("beta", 1)
        kept = {k: v for k, v in node.meta.items() if k in ("stack_trace", "nn_module_stack")}
        value = node.meta["val"]

        def call(target, args, val):
            with gm.graph.inserting_before(node):
                made = gm.graph.call_function(target, args)
            made.meta.update(kept, val=val)
            return made

        product = call(aten.mm.default, (a, b), value)
        if alpha != 1:
            product = call(aten.mul.Tensor, (product, alpha), value)
        result = product
        if beta != 0:
            scaled = bias if beta == 1 else call(aten.mul.Tensor, (bias, beta), bias.meta["val"])
            result = call(aten.add.Tensor, (product, scaled), value)
        node.replace_all_uses_with(result)
        gm.graph.erase_node(node)
    return len(nodes)
