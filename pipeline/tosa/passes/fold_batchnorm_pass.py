"""Fold an inference BatchNorm that follows a conv2d (or a linear with a rank-2 output, where
BatchNorm1d's channels are the linear's features) into its weights and bias.

Quantized graphs arrive with BatchNorm already folded (``prepare_pt2e`` folds conv+BN before
observing, so the weights are quantized after folding); this pass serves float graphs lowered
for the FP profile. A BatchNorm that does not follow a foldable conv is left alone and then
fails lowering as an unsupported operator.
"""

from __future__ import annotations

import operator

import torch
from torch import fx

from pipeline.tosa.passes.context import PassContext, const_node

_BATCH_NORMS = ("aten.batch_norm.default", "aten._native_batch_norm_legit_no_training.default")


def _bn_params(node: fx.Node):
    """(gamma, beta, mean, var, eps) as tensors, or None if any is not a constant."""
    if str(node.target) == "aten.batch_norm.default":
        _, weight, bias, mean, var, training, _, eps = node.args[:8]
        if training:
            return None
    else:
        _, weight, bias, mean, var, _, eps = node.args[:7]
    values = [
        n.meta.get("const") if isinstance(n, fx.Node) else None for n in (weight, bias, mean, var)
    ]
    return None if any(v is None for v in values) else (*values, float(eps))


def _foldable_conv(node: fx.Node) -> fx.Node | None:
    conv = node.args[0]
    if not (
        isinstance(conv, fx.Node)
        and str(conv.target) in ("aten.conv2d.default", "aten.linear.default")
        and len(conv.users) == 1
        and conv.args[1].meta.get("const") is not None
    ):
        return None
    if str(conv.target) == "aten.linear.default" and conv.meta["val"].dim() != 2:
        return None  # BatchNorm1d of [N, C, L] normalizes C, not the linear's features L
    return conv


def _fold(gm: fx.GraphModule, bn: fx.Node, conv: fx.Node, params) -> None:
    gamma, beta, mean, var, eps = (p.detach().double() if torch.is_tensor(p) else p for p in params)
    factor = gamma / torch.sqrt(var + eps)
    weight = conv.args[1].meta["const"].detach().double()
    bias_node = conv.args[2] if len(conv.args) > 2 else None
    bias = (
        bias_node.meta["const"].detach().double()
        if bias_node is not None
        else torch.zeros(weight.shape[0], dtype=torch.float64)
    )
    folded = (weight * factor.reshape(-1, *[1] * (weight.dim() - 1))).float()
    new_weight = const_node(gm, f"{conv.name}_weight_bn", folded)
    new_bias = const_node(gm, f"{conv.name}_bias_bn", ((bias - mean) * factor + beta).float())
    args = list(conv.args) + [None] * (3 - len(conv.args))
    args[1], args[2] = new_weight, new_bias
    conv.args = tuple(args)
    users = [u for u in bn.users if u.target is operator.getitem] or [bn]
    for user in users:
        user.replace_all_uses_with(conv)
    for user in users:
        if user is not bn:
            gm.graph.erase_node(user)
    gm.graph.erase_node(bn)


def run(gm: fx.GraphModule, ctx: PassContext) -> None:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or str(node.target) not in _BATCH_NORMS:
            continue
        conv, params = _foldable_conv(node), _bn_params(node)
        if conv is not None and params is not None:
            _fold(gm, node, conv, params)
