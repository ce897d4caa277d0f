"""MLPerf-Tiny-like networks written the way users write them, not the ones in ``models/``.

In-place relu, ``x += y`` residuals, dropout, BatchNorm whose statistics are not the identity:
every BatchNorm gets per-channel scales and shifts drawn log-normal / normal, as a trained
network's has, and running statistics measured on the activations it sees (random inputs like
the build's calibration samples). Weights come from a fixed seed; depthwise filters lean
low-pass, as trained ones do, so the random network is not chaotic.
``benchmarks/tiny_networks.yaml`` lists them for ``bench_vs_executorch.py --targets``;
``bench_quant_accuracy.py`` trains some of them (``in_channels``, ``num_classes``, ``size``).
"""

from __future__ import annotations

import torch
from torch import nn


def _settle_batchnorm(model: nn.Module, shape: tuple[int, ...], seed: int) -> None:
    """Running statistics from the model's own activations, then trained-looking affines.

    One BatchNorm at a time, in order, with the ones before it already in eval mode: each
    sees the activations it will see at inference, so 30 layers deep nothing drifts.
    """
    generator = torch.Generator().manual_seed(seed)
    batches = [torch.rand((8, *shape[1:]), generator=generator) * 2 - 1 for _ in range(4)]
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    model.eval()
    with torch.no_grad():
        for bn in norms:
            bn.weight.copy_(torch.exp(0.5 * torch.randn(bn.num_features, generator=generator)))
            # Shifts mostly positive, some negative: channels from nearly linear to mostly
            # zero after the relu, and a network that is not chaotic (see _smooth_depthwise).
            bn.bias.copy_(1.5 + torch.randn(bn.num_features, generator=generator))
            bn.reset_running_stats()
            bn.momentum, bn.training = None, True  # a cumulative average over the batches
            for batch in batches:
                model(batch)
            bn.momentum, bn.training = 0.1, False


def _smooth_depthwise(model: nn.Module, mean: float = 0.15) -> None:
    """Trained depthwise filters are mostly low-pass; random zero-mean ones amplify noise
    layer after layer, and a network that chaotic gives SQNR figures that say nothing."""
    with torch.no_grad():
        for conv in model.modules():
            if isinstance(conv, nn.Conv2d) and conv.groups > 1:
                conv.weight.add_(mean)


def _conv_bn(cin: int, cout: int, kernel, stride=1, groups: int = 1, padding=None):
    if padding is None:
        padding = tuple(k // 2 for k in kernel) if isinstance(kernel, tuple) else kernel // 2
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, stride, padding, groups=groups, bias=False),
        nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class TinyMobileNet(nn.Module):
    """MobileNetV1-0.25 (visual wake words): 3x3/2 stem, 13 depthwise-separable blocks,
    global pool, dropout, linear."""

    example_shapes = ((1, 3, 96, 96),)
    _BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
               (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))

    def __init__(self, in_channels: int = 3, num_classes: int = 2, size: int = 96,
                 alpha: float = 0.25, seed: int = 7, settle: bool = True):
        super().__init__()
        torch.manual_seed(seed)
        width = int(32 * alpha)
        layers = [_conv_bn(in_channels, width, 3, 2)]
        for channels, stride in self._BLOCKS:
            out = int(channels * alpha)
            layers += [_conv_bn(width, width, 3, stride, groups=width), _conv_bn(width, out, 1)]
            width = out
        self.features = nn.Sequential(*layers)
        self.dropout = nn.Dropout(0.2)
        self.classifier = nn.Linear(width, num_classes)
        self.example_shapes = ((1, in_channels, size, size),)
        _smooth_depthwise(self)
        if settle:
            _settle_batchnorm(self, self.example_shapes[0], seed)

    def forward(self, x):
        x = self.features(x).mean((2, 3))
        return self.classifier(self.dropout(x))


class TinyDSCNN(nn.Module):
    """DS-CNN (keyword spotting): 10x4/2 conv, 4 depthwise-separable blocks, average pool,
    dropout, linear 12."""

    example_shapes = ((1, 1, 49, 10),)

    def __init__(self, channels: int = 64, num_classes: int = 12, seed: int = 11,
                 settle: bool = True):
        super().__init__()
        torch.manual_seed(seed)
        self.stem = _conv_bn(1, channels, (10, 4), 2, padding=(5, 1))
        self.blocks = nn.Sequential(*[
            nn.Sequential(_conv_bn(channels, channels, 3, groups=channels),
                          _conv_bn(channels, channels, 1)) for _ in range(4)])
        self.dropout = nn.Dropout(0.4)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)
        _smooth_depthwise(self)
        if settle:
            _settle_batchnorm(self, self.example_shapes[0], seed)

    def forward(self, x):
        x = self.blocks(self.dropout(self.stem(x)))
        return self.fc(torch.flatten(self.dropout(self.pool(x)), 1))


class _Residual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.down is None else self.down(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class TinyResNet(nn.Module):
    """ResNet-8 variant (image classification): 3x3 stem, three residual stages with a
    BatchNorm'd 1x1 projection where the shape changes, average pool, linear."""

    example_shapes = ((1, 3, 32, 32),)

    def __init__(self, in_channels: int = 3, num_classes: int = 10, size: int = 32,
                 widths=(16, 32, 64), seed: int = 13, settle: bool = True):
        super().__init__()
        torch.manual_seed(seed)
        self.stem = _conv_bn(in_channels, widths[0], 3)
        stages, cin = [], widths[0]
        for i, width in enumerate(widths):
            stages.append(_Residual(cin, width, 1 if i == 0 else 2))
            cin = width
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(cin, num_classes)
        self.example_shapes = ((1, in_channels, size, size),)
        if settle:
            _settle_batchnorm(self, self.example_shapes[0], seed)

    def forward(self, x):
        x = self.stages(self.stem(x))
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class TinyAutoEncoder(nn.Module):
    """Anomaly-detection autoencoder: 640 -> 4 x (128, BatchNorm1d, relu) -> 8 -> 4 x 128
    -> 640."""

    example_shapes = ((1, 640),)

    def __init__(self, features: int = 640, hidden: int = 128, code: int = 8, seed: int = 17,
                 settle: bool = True):
        super().__init__()
        torch.manual_seed(seed)
        widths = (hidden,) * 4 + (code,) + (hidden,) * 4
        layers, cin = [], features
        for width in widths:
            layers += [nn.Linear(cin, width), nn.BatchNorm1d(width), nn.ReLU(inplace=True)]
            cin = width
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(cin, features)
        if settle:
            _settle_batchnorm(self, self.example_shapes[0], seed)

    def forward(self, x):
        return self.out(self.body(x))
