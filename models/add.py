"""Example model: element-wise addition of two NCHW tensors (inputs 1x8x8x16 each)."""

import torch


class AddModel(torch.nn.Module):
    """forward(x, y) = x + y."""

    example_shapes = ((1, 8, 8, 16), (1, 8, 8, 16))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


def example_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """One input tuple of the documented shapes (uniform in [-1, 1))."""
    return tuple(torch.rand(shape) * 2 - 1 for shape in AddModel.example_shapes)
