"""Example model: a small image classifier (input 1x3x32x32, 10 classes)."""

import torch
from torch import nn


class SmallCNN(nn.Module):
    """conv+BN+relu -> maxpool -> conv+relu -> global avgpool -> flatten -> linear.

    Weights are drawn from a fixed seed inside ``__init__`` so every build of the model is
    identical; the BatchNorm statistics are set to non-trivial values so folding them matters.
    """

    example_shapes = ((1, 3, 32, 32),)

    def __init__(self, num_classes: int = 10, seed: int = 0):
        super().__init__()
        generator_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.pool2 = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, num_classes)
        with torch.no_grad():
            self.bn1.running_mean.uniform_(-0.2, 0.2)
            self.bn1.running_var.uniform_(0.5, 1.5)
            self.bn1.weight.uniform_(0.5, 1.5)
            self.bn1.bias.uniform_(-0.2, 0.2)
        torch.random.set_rng_state(generator_state)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(torch.relu(self.bn1(self.conv1(x))))
        x = torch.relu(self.conv2(x))
        x = torch.flatten(self.pool2(x), 1)
        return self.fc(x)


def example_inputs() -> tuple[torch.Tensor]:
    """One input tuple of the documented shape (uniform in [-1, 1))."""
    return (torch.rand(SmallCNN.example_shapes[0]) * 2 - 1,)
