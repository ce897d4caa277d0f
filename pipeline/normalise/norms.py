"""group_norm and instance_norm written out before quantization, like layer_norm
(``decompose.py``): ``(x - mean) * rsqrt(var + eps)``, then the per-channel affine, so every
intermediate gets its own observed qparams and each step lowers to an Ethos-U operator.

The statistics suit NHWC: a group's mean is taken as two means - over each channel's spatial
dims (AVG_POOL2D of the image in place), then over the channels of each group (a REDUCE_SUM
over C of the [N, G, C/G] means) - and broadcast back to the channels with expand (TILE).
The spatial means all count the same elements, so their mean is the group mean; no TRANSPOSE
of the activation is needed, only of nothing larger than [N, C]. InstanceNorm is the case
G = C (the spatial mean alone); eval-mode InstanceNorm with running statistics is an affine
map by constants (folded by normalisation).
"""

from __future__ import annotations

import torch


def _group_mean(t: torch.Tensor, groups: int) -> torch.Tensor:
    """Each value of ``t`` [N, C, *spatial] replaced by the mean over its channel group and
    the spatial dims: shape [N, C, 1, ...] (or [N, 1, ...] for one group)."""
    n, c, spatial = t.shape[0], t.shape[1], list(range(2, t.dim()))
    per_channel = t.mean(spatial, keepdim=True) if spatial else t
    if groups == c:
        return per_channel
    if groups == 1:
        return per_channel.mean(1, keepdim=True)
    per_group = per_channel.reshape(n, groups, c // groups).mean(-1, keepdim=True)
    return per_group.expand(n, groups, c // groups).reshape(per_channel.shape)


def _affine(y: torch.Tensor, weight, bias) -> torch.Tensor:
    """``y * weight + bias`` per channel (dim 1)."""
    shape = (-1,) + (1,) * (y.dim() - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    return y + bias.reshape(shape) if bias is not None else y


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    centered = x - _group_mean(x, num_groups)
    variance = _group_mean(centered * centered, num_groups)
    return _affine(centered * torch.rsqrt(variance + eps), weight, bias)


def instance_norm(
    x, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled
):
    if use_input_stats:
        return group_norm(x, x.shape[1], weight, bias, eps)
    scale = torch.rsqrt(running_var + eps)
    scale = scale * weight if weight is not None else scale
    shift = -running_mean * scale
    return _affine(x, scale, shift + bias if bias is not None else shift)
