import pytest
import torch
from torch import nn

pytestmark = pytest.mark.needs_torch


def test_calibrated_program_tracks_the_float_model():
    from pipeline.chain.quantize import quantize_program

    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16, 4))
    samples = [(torch.rand(1, 3, 6, 6) * 2 - 1,) for _ in range(8)]
    quantized = quantize_program(torch.export.export(module.eval(), samples[0]), samples)
    x = samples[0][0]
    reference, approx = module(x), quantized.module(check_guards=False)(x)
    sqnr = 10 * torch.log10(reference.pow(2).sum() / (reference - approx).pow(2).sum())
    assert sqnr > 30
