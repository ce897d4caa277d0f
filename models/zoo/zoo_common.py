"""What the zoo's models share: BatchNorm with statistics a trained network would have."""

import torch
from torch import nn


def trained_batchnorm_statistics(model: nn.Module, seed: int = 0) -> nn.Module:
    """Give every BatchNorm non-trivial running statistics and affine parameters (a freshly
    initialised one is the identity, which hides folding mistakes), then ``eval()``."""
    generator = torch.Generator().manual_seed(seed)

    def uniform(t: torch.Tensor, lo: float, hi: float) -> None:
        t.copy_(torch.rand(t.shape, generator=generator) * (hi - lo) + lo)

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.modules.batchnorm._BatchNorm):
                uniform(module.running_mean, -0.3, 0.3)
                uniform(module.running_var, 0.4, 1.6)
                uniform(module.weight, 0.6, 1.4)
                uniform(module.bias, -0.3, 0.3)
    return model.eval()
