"""Cross-layer equalisation (Nagel et al. 2019, "Data-free quantization"): rescale the channels
between two consecutive conv/linear layers so each channel's weight range is shared evenly.

For a pair ``layer1 -> [ops] -> layer2`` where the ops act per channel and are positively
homogeneous (f(s x) = s f(x) for s > 0: relu, leaky_relu, max/avg pooling, a mean over other
axes), dividing layer 1's output channel i (weights and bias) by s_i and multiplying layer 2's
input channel i by s_i leaves the float function as it was. s_i = sqrt(r1_i / r2_i), with r the
largest magnitude of the channel's weights (the weights are quantized symmetrically), makes
both ranges sqrt(r1_i r2_i). relu6, hardtanh, clamp and hardswish are not homogeneous (their
clipping points do not scale), so a pair through them is left alone; so is any pair whose
intermediate tensor has another reader or whose weights are not constants of their own.
Chains (conv -> depthwise -> conv) are swept until the scales settle, as the paper does.

The module is rewritten before ``prepare_pt2e``, so the quantizer calibrates the equalised
network; normalisation has already folded BatchNorm into the conv before it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import fx

from pipeline.quant.layers import LINEAR, Layer, find_layers, get_tensor, set_tensor
from pipeline.fx import call_arguments

ELEMENTWISE = ("aten.relu.default", "aten.leaky_relu.default")
# Pools on [..., C, *spatial]: the number of spatial axes after the channels.
POOLS = {
    "aten.max_pool1d.default": 1,
    "aten.avg_pool1d.default": 1,
    "aten.max_pool2d.default": 2,
    "aten.avg_pool2d.default": 2,
    "aten.adaptive_avg_pool2d.default": 2,
}
MEAN = "aten.mean.dim"
SWEEPS = 20  # at most; a sweep changing no scale by more than TOLERANCE ends it
TOLERANCE = 1e-4


@dataclass(frozen=True)
class Pair:
    first: Layer
    second: Layer


def _rank(node: fx.Node) -> int | None:
    value = node.meta.get("val")
    return value.dim() if isinstance(value, torch.Tensor) else None


def _follow(node: fx.Node, axis: int) -> int | None:
    """Where channel ``axis`` of ``node``'s input lands in its output, or None when the op
    does not act per channel, positively homogeneous."""
    name, rank = str(node.target), _rank(node.args[0])
    if rank is None:
        return None
    if name in ELEMENTWISE:
        return axis
    if name in POOLS:
        return axis if axis == rank - POOLS[name] - 1 else None
    if name == MEAN:
        arguments = call_arguments(node)
        dims = {d % rank for d in (arguments["dim"] or range(rank))}
        if axis in dims:
            return None
        return axis if arguments["keepdim"] else axis - sum(d < axis for d in dims)
    return None


def _next_layer(layer: Layer, layers: dict[fx.Node, Layer]) -> Layer | None:
    """The layer reading ``layer``'s output channels through per-channel ops only."""
    node, rank = layer.node, _rank(layer.node)
    if rank is None:
        return None
    axis = layer.channel_axis % rank
    while len(node.users) == 1:
        user = next(iter(node.users))
        if user in layers:
            second = layers[user]
            reads = user.args[0] is node and user.args[1] is not node
            linear = str(user.target) == LINEAR
            rank = _rank(node)
            fits = axis == (rank - 1 if linear else 1) if rank else False
            return second if reads and fits else None
        if user.op != "call_function" or user.args[0] is not node:
            return None
        axis = _follow(user, axis)
        if axis is None:
            return None
        node = user
    return None


def find_pairs(module: fx.GraphModule) -> list[Pair]:
    """Every pair of layers equalisation may rescale, in graph order."""
    layers = find_layers(module)
    pairs = []
    for layer in layers.values():
        second = _next_layer(layer, layers)
        if second is not None and second is not layer:
            pairs.append(Pair(layer, second))
    return pairs


def _grouped(weight: torch.Tensor, groups: int) -> torch.Tensor:
    """Layer 2's weights [out, in / groups, *k] as [groups, out / groups, in / groups, k]:
    input channel i is [i // (in / groups), :, i % (in / groups)]."""
    out, per_group = weight.shape[0], weight.shape[1]
    return weight.reshape(groups, out // groups, per_group, -1)


def _equalise(pair: Pair, weights: dict[str, torch.Tensor]) -> float:
    """Rescale one pair in ``weights`` (float64 working copies); the largest |log s|."""
    w1, w2 = weights[pair.first.weight], weights[pair.second.weight]
    groups = pair.second.groups
    channels = w2.shape[1] * groups
    if w1.shape[0] != channels:
        return 0.0
    r1 = w1.abs().reshape(channels, -1).amax(dim=1)
    r2 = _grouped(w2, groups).abs().amax(dim=(1, 3)).reshape(channels)
    usable = (r1 > 0) & (r2 > 0)
    scale = torch.where(usable, torch.sqrt(r1 / torch.where(usable, r2, 1.0)), 1.0)
    weights[pair.first.weight] = w1 / scale.reshape(-1, *[1] * (w1.dim() - 1))
    if pair.first.bias is not None:
        weights[pair.first.bias] = weights[pair.first.bias] / scale
    grouped = _grouped(w2, groups) * scale.reshape(groups, 1, -1, 1)
    weights[pair.second.weight] = grouped.reshape(w2.shape)
    return float(scale.log().abs().max())


def equalise(module: fx.GraphModule) -> dict:
    """Equalise every pair of ``module`` in place (its attributes point at new tensors).

    Returns:
        What ran, for the report: ``pairs`` equalised and ``sweeps`` made.
    """
    pairs = find_pairs(module)
    with torch.no_grad():
        sweeps = _sweep(module, pairs)
    return {"pairs": len(pairs), "sweeps": sweeps}


def _sweep(module: fx.GraphModule, pairs: list[Pair]) -> int:
    if not pairs:
        return 0
    layers = [layer for pair in pairs for layer in (pair.first, pair.second)]
    targets = {t for layer in layers for t in (layer.weight, layer.bias) if t}
    weights = {t: get_tensor(module, t).double() for t in targets}
    sweeps = 0
    for sweeps in range(1, SWEEPS + 1):
        if max(_equalise(pair, weights) for pair in pairs) < TOLERANCE:
            break
    for target, value in weights.items():
        set_tensor(module, target, value)
    return sweeps
