"""Example model: ResNet-8 (MLPerf Tiny image classification; input 1x3x32x32, 10 classes)."""

import torch
from torch import nn


def _randomize_batchnorm(bn: nn.BatchNorm2d) -> None:
    with torch.no_grad():
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)


class _Stage(nn.Module):
    """conv3x3(stride) + BN + relu -> conv3x3 + BN, plus the shortcut; add; relu."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride=stride) if stride != 1 else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        skip = x if self.shortcut is None else self.shortcut(x)
        return torch.relu(y + skip)


class ResNet8(nn.Module):
    """conv3x3 16 + BN + relu -> stages 16 (stride 1), 32 (stride 2), 64 (stride 2), the
    strided ones with a 1x1 conv shortcut -> average pool 8x8 -> linear 10."""

    example_shapes = ((1, 3, 32, 32),)

    def __init__(self, num_classes: int = 10, seed: int = 0):
        super().__init__()
        state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.stages = nn.Sequential(_Stage(16, 16, 1), _Stage(16, 32, 2), _Stage(32, 64, 2))
        self.pool = nn.AvgPool2d(8)
        self.fc = nn.Linear(64, num_classes)
        for module in self.modules():
            if isinstance(module, nn.BatchNorm2d):
                _randomize_batchnorm(module)
        torch.random.set_rng_state(state)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(torch.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(self.pool(x), 1))
