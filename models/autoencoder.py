"""Example model: the MLPerf Tiny anomaly-detection autoencoder (input 1x640, output 1x640)."""

import torch
from torch import nn

_WIDTHS = (128, 128, 128, 128, 8, 128, 128, 128, 128)


class AutoEncoder(nn.Module):
    """Fully connected 640 -> 128 -> 128 -> 128 -> 128 -> 8 -> 128 -> 128 -> 128 -> 128 ->
    640; every hidden layer is linear + BatchNorm1d + relu, the last one linear only."""

    example_shapes = ((1, 640),)

    def __init__(self, features: int = 640, seed: int = 0):
        super().__init__()
        state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        layers, width = [], features
        for out in _WIDTHS:
            bn = nn.BatchNorm1d(out)
            with torch.no_grad():
                bn.running_mean.uniform_(-0.2, 0.2)
                bn.running_var.uniform_(0.5, 1.5)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.2, 0.2)
            layers += [nn.Linear(width, out), bn, nn.ReLU()]
            width = out
        layers.append(nn.Linear(width, features))
        self.layers = nn.Sequential(*layers)
        torch.random.set_rng_state(state)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)
