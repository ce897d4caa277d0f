"""Example model: MobileNetV1 alpha 0.25 (MLPerf Tiny visual wake words; 1x3x96x96, 2 classes)."""

import torch
from torch import nn

# (output channels at alpha 1.0, stride) of the 13 depthwise-separable blocks.
_BLOCKS = (
    (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
    (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1),
)  # fmt: skip


def _randomize_batchnorm(bn: nn.BatchNorm2d) -> None:
    with torch.no_grad():
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)


def _conv_bn_relu(cin: int, cout: int, kernel: int, stride: int, groups: int = 1):
    return [
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
    ]


class MobileNetV1(nn.Module):
    """conv 3x3/2 -> 13 x (depthwise 3x3 + BN + relu, pointwise 1x1 + BN + relu) -> global
    average pool -> linear. Channel counts are scaled by ``alpha`` (0.25: 8 ... 256)."""

    example_shapes = ((1, 3, 96, 96),)

    def __init__(self, num_classes: int = 2, alpha: float = 0.25, seed: int = 0):
        super().__init__()
        state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        channels = int(32 * alpha)
        layers = _conv_bn_relu(3, channels, 3, 2)
        for width, stride in _BLOCKS:
            out = int(width * alpha)
            layers += _conv_bn_relu(channels, channels, 3, stride, groups=channels)
            layers += _conv_bn_relu(channels, out, 1, 1)
            channels = out
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)
        for module in self.modules():
            if isinstance(module, nn.BatchNorm2d):
                _randomize_batchnorm(module)
        torch.random.set_rng_state(state)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))
