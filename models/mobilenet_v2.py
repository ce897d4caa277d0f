"""Example model: MobileNetV2 width 0.35 (visual wake words size; input 1x3x96x96, 2 classes)."""

import torch
from torch import nn

# (expansion t, output channels c at width 1.0, repeats n, first stride s), as in the paper.
_SETTINGS = (
    (1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
    (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1),
)  # fmt: skip


def _divisible(value: float, divisor: int = 8) -> int:
    """Channel counts rounded to a multiple of 8 (never below 90% of ``value``), as in the
    reference implementation."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def _conv_bn_relu6(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1):
    return [
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU6(),
    ]


class _InvertedResidual(nn.Module):
    """1x1 expand + relu6 -> depthwise 3x3 + relu6 -> 1x1 project (linear); + input when the
    shape is kept."""

    def __init__(self, cin: int, cout: int, stride: int, expansion: int):
        super().__init__()
        hidden = cin * expansion
        layers = _conv_bn_relu6(cin, hidden, 1) if expansion != 1 else []
        layers += _conv_bn_relu6(hidden, hidden, 3, stride, groups=hidden)
        layers += [nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    """conv 3x3/2 -> 17 inverted residual blocks -> conv 1x1 (1280) -> global average pool
    -> linear. Widths are scaled by ``width`` (0.35: 16 ... 112, last conv stays 1280)."""

    example_shapes = ((1, 3, 96, 96),)

    def __init__(self, num_classes: int = 2, width: float = 0.35, seed: int = 0):
        super().__init__()
        state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        channels = _divisible(32 * width)
        layers = _conv_bn_relu6(3, channels, 3, 2)
        for expansion, c, repeats, stride in _SETTINGS:
            out = _divisible(c * width)
            for i in range(repeats):
                layers.append(_InvertedResidual(channels, out, stride if i == 0 else 1, expansion))
                channels = out
        layers += _conv_bn_relu6(channels, 1280, 1)
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(1280, num_classes)
        for module in self.modules():
            if isinstance(module, nn.BatchNorm2d):
                with torch.no_grad():
                    module.running_mean.uniform_(-0.2, 0.2)
                    module.running_var.uniform_(0.5, 1.5)
                    module.weight.uniform_(0.5, 1.5)
                    module.bias.uniform_(-0.2, 0.2)
        torch.random.set_rng_state(state)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))
