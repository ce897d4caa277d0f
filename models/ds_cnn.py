"""Example model: DS-CNN keyword spotting (MLPerf Tiny KWS; input 1x1x49x10 MFCCs, 12 classes)."""

import torch
from torch import nn


def _randomize_batchnorm(bn: nn.BatchNorm2d) -> None:
    """Non-trivial statistics, so folding BatchNorm is exercised like a trained model's."""
    with torch.no_grad():
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)


class DSCNN(nn.Module):
    """conv 10x4 stride 2 + BN + relu -> 4x (depthwise 3x3 + BN + relu, pointwise 1x1 + BN +
    relu) -> global average pool -> linear 12. Weights come from a fixed seed."""

    example_shapes = ((1, 1, 49, 10),)

    def __init__(self, num_classes: int = 12, channels: int = 64, seed: int = 0):
        super().__init__()
        state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        # TF "same" padding of a 10x4 kernel at stride 2 on 49x10: 4 rows before, 5 after;
        # 1 column before, 1 after (asymmetric, done with an explicit pad like a TF port does).
        self.pad = nn.ZeroPad2d((1, 1, 4, 5))
        self.conv = nn.Conv2d(1, channels, (10, 4), stride=2)
        self.bn = nn.BatchNorm2d(channels)
        blocks = []
        for _ in range(4):
            blocks += [
                nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False),
                nn.BatchNorm2d(channels),
                nn.ReLU(),
                nn.Conv2d(channels, channels, 1, bias=False),
                nn.BatchNorm2d(channels),
                nn.ReLU(),
            ]
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)
        for module in self.modules():
            if isinstance(module, nn.BatchNorm2d):
                _randomize_batchnorm(module)
        torch.random.set_rng_state(state)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn(self.conv(self.pad(x))))
        x = self.blocks(x)
        return self.fc(torch.flatten(self.pool(x), 1))
