"""Random architectures of the four families, written the way users write them: in-place
ReLU, ``out += identity``, dropout, hand-written attention with a mask, BatchNorm everywhere a
conv has one. Each ``build_<family>(rng)`` returns ``(module, input kind, input shape)``."""

from __future__ import annotations

import math
import random

import torch
from torch import nn


def _act(name: str) -> nn.Module:
    return {"relu": nn.ReLU(inplace=True), "relu6": nn.ReLU6(inplace=True),
            "hardswish": nn.Hardswish(), "silu": nn.SiLU(), "gelu": nn.GELU()}[name]


def _conv_bn(cin, cout, k, stride=1, groups=1, act="relu", dims=2) -> nn.Sequential:
    conv = (nn.Conv2d if dims == 2 else nn.Conv1d)(cin, cout, k, stride, k // 2, groups=groups,
                                                   bias=False)
    norm = (nn.BatchNorm2d if dims == 2 else nn.BatchNorm1d)(cout)
    layers = [conv, norm] + ([_act(act)] if act else [])
    return nn.Sequential(*layers)


class Head(nn.Module):
    """Global average pool, dropout, linear classifier."""

    def __init__(self, channels: int, classes: int, dropout: float):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        x = x.mean(dim=tuple(range(2, x.dim())))
        return self.fc(self.drop(x))


class ConvNet(nn.Module):
    """A plain conv-BN-act stack (2-D on images, 1-D on audio), max pools between stages."""

    def __init__(self, rng: random.Random, dims: int, cin: int):
        super().__init__()
        act = rng.choice(["relu", "relu", "relu6", "silu"])
        width = rng.choice([8, 12, 16, 24])
        stem_k, stem_s = (3, 2) if dims == 2 else (rng.choice([40, 80]) + 1, 16)
        layers = [_conv_bn(cin, width, stem_k, stem_s, act=act, dims=dims)]
        pool = nn.MaxPool2d if dims == 2 else nn.MaxPool1d
        for stage in range(rng.randint(2, 4)):
            out = min(width * rng.choice([1, 2]), 96)
            for _ in range(rng.randint(1, 2)):
                layers.append(_conv_bn(width, out, rng.choice([3, 3, 5]), act=act, dims=dims))
                width = out
            if stage < 2:
                layers.append(pool(2) if dims == 2 else pool(4))
        self.features = nn.Sequential(*layers)
        self.head = Head(width, rng.choice([10, 12, 35]), rng.choice([0.0, 0.1, 0.2]))

    def forward(self, x):
        return self.head(self.features(x))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand, act, k):
        super().__init__()
        hidden = cin * expand
        layers = [_conv_bn(cin, hidden, 1, act=act)] if expand != 1 else []
        layers += [_conv_bn(hidden, hidden, k, stride, groups=hidden, act=act),
                   _conv_bn(hidden, cout, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        out = self.block(x)
        if self.residual:
            out += x
        return out


class DepthwiseNet(nn.Module):
    """MobileNetV2-style inverted residuals (V1-style separable blocks when expand is 1)."""

    def __init__(self, rng: random.Random):
        super().__init__()
        act = rng.choice(["relu6", "relu6", "relu", "hardswish"])
        width = rng.choice([8, 16])
        expand = rng.choice([1, 4, 6, 6])
        layers = [_conv_bn(3, width, 3, 2, act=act)]
        for _ in range(rng.randint(3, 6)):
            stride = rng.choice([1, 1, 2])
            out = width if stride == 1 and rng.random() < 0.6 else min(width + 8, 64)
            layers.append(InvertedResidual(width, out, stride, expand, act, rng.choice([3, 3, 5])))
            width = out
        last = rng.choice([64, 128, 160])
        layers.append(_conv_bn(width, last, 1, act=act))
        self.features = nn.Sequential(*layers)
        self.head = Head(last, rng.choice([10, 100]), rng.choice([0.0, 0.2]))

    def forward(self, x):
        return self.head(self.features(x))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride, dims):
        super().__init__()
        self.conv1 = _conv_bn(cin, cout, 3, stride, dims=dims)
        self.conv2 = _conv_bn(cout, cout, 3, act=None, dims=dims)
        self.shortcut = (_conv_bn(cin, cout, 1, stride, act=None, dims=dims)
                         if stride != 1 or cin != cout else None)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        identity = x if self.shortcut is None else self.shortcut(x)
        out = self.conv2(self.conv1(x))
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """ResNet basic blocks (2-D on images, 1-D on spectrogram frames as TC-ResNet does)."""

    def __init__(self, rng: random.Random, dims: int, cin: int):
        super().__init__()
        width = rng.choice([8, 16, 24])
        layers = [_conv_bn(cin, width, 3, 1 if dims == 1 else rng.choice([1, 2]), dims=dims)]
        for stage in range(rng.randint(2, 3)):
            out = width if stage == 0 else min(width * 2, 64)
            for block in range(rng.randint(1, 2)):
                layers.append(BasicBlock(width, out, 2 if block == 0 and stage else 1, dims))
                width = out
        self.features = nn.Sequential(*layers)
        self.head = Head(width, rng.choice([10, 12]), rng.choice([0.0, 0.1]))

    def forward(self, x):
        return self.head(self.features(x))


class PreNormBlock(nn.Module):
    """x + attn(LN(x)), then + MLP(LN(.)); attention written out, with an optional causal
    mask filled with -inf or finfo.min, and dropout."""

    def __init__(self, rng: random.Random, dim: int, heads: int):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        hidden = dim * rng.choice([2, 4])
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), _act(rng.choice(["gelu", "gelu",
                                                                          "relu", "silu"])),
                                 nn.Dropout(0.1), nn.Linear(hidden, dim))
        self.attn_drop = nn.Dropout(0.1)
        self.causal = rng.random() < 0.4
        self.fill = rng.choice([float("-inf"), torch.finfo(torch.float32).min])

    def attention(self, x):
        batch, tokens, dim = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(batch, tokens, self.heads, self.head_dim).transpose(1, 2)
                   for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if self.causal:
            mask = torch.ones(tokens, tokens, dtype=torch.bool).triu(1)
            scores = scores.masked_fill(mask, self.fill)
        weights = self.attn_drop(scores.softmax(dim=-1))
        out = (weights @ v).transpose(1, 2).reshape(batch, tokens, dim)
        return self.proj(out)

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return x


class AttentionNet(nn.Module):
    """A patch (image) or strided-conv (audio) embedding, positions, pre-norm blocks, a final
    LayerNorm, mean over tokens and a linear head."""

    def __init__(self, rng: random.Random, kind: str, tokens: int):
        super().__init__()
        dim = rng.choice([32, 48, 64])
        heads = rng.choice([2, 4])
        if kind == "image":
            self.embed = nn.Conv2d(3, dim, 8, 8)
        else:
            self.embed = nn.Sequential(nn.Conv1d(1, dim, 64, 32, 16), nn.GELU())
        self.position = nn.Parameter(torch.randn(1, tokens, dim) * 0.1)
        self.blocks = nn.Sequential(*[PreNormBlock(rng, dim, heads)
                                      for _ in range(rng.randint(1, 3))])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, rng.choice([10, 35]))
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = self.drop(x + self.position)
        x = self.norm(self.blocks(x))
        return self.head(x.mean(dim=1))


def _trained_looking_norms(module: nn.Module, rng: random.Random) -> None:
    """LayerNorm affine parameters as trained transformers have them: gains around 1, small
    shifts, and in some nets a few outlier channels with large gains."""
    generator = torch.Generator().manual_seed(rng.randrange(2**31))
    outliers = rng.random() < 0.5
    with torch.no_grad():
        for norm in module.modules():
            if isinstance(norm, nn.LayerNorm):
                norm.weight.copy_(0.5 + torch.rand(norm.weight.shape, generator=generator))
                norm.bias.copy_(0.4 * torch.rand(norm.bias.shape, generator=generator) - 0.2)
                if outliers:
                    channels = torch.randperm(norm.weight.numel(), generator=generator)[:2]
                    norm.weight[channels] *= 4 + 4 * float(torch.rand(1, generator=generator))


def build_conv(rng: random.Random):
    if rng.random() < 0.5:
        size = rng.choice([32, 48, 64])
        return ConvNet(rng, 2, 3), "image", (1, 3, size, size)
    return ConvNet(rng, 1, 1), "audio", (1, 1, rng.choice([2000, 4000]))


def build_depthwise(rng: random.Random):
    size = rng.choice([32, 48, 64, 96])
    return DepthwiseNet(rng), "image", (1, 3, size, size)


def build_residual(rng: random.Random):
    if rng.random() < 0.6:
        size = rng.choice([32, 48])
        return ResNet(rng, 2, 3), "image", (1, 3, size, size)
    bands, frames = rng.choice([(40, 49), (32, 49), (40, 32)])
    return ResNet(rng, 1, bands), "spectrogram", (1, bands, frames)


def build_attention(rng: random.Random):
    if rng.random() < 0.5:
        size = rng.choice([32, 48])
        net = AttentionNet(rng, "image", (size // 8) ** 2)
        shape = (1, 3, size, size)
        kind = "image"
    else:
        length = rng.choice([512, 1024])
        net = AttentionNet(rng, "audio", (length + 32 - 64) // 32 + 1)
        shape, kind = (1, 1, length), "audio"
    _trained_looking_norms(net, rng)
    return net, kind, shape


FAMILIES = {"conv": build_conv, "depthwise": build_depthwise, "residual": build_residual,
            "attention": build_attention}
