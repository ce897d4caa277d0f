"""Per-layer SQNR in the quantize record (pipeline/quant/layer_sqnr.py)."""

import pytest
import torch
from torch import nn

pytestmark = pytest.mark.needs_torch


class Offset(nn.Module):
    """conv -> BN -> in-place relu -> conv, shifted by 300 and back (a constant a user added
    and took away again), += the block's input, a linear head. int8 spends its codes on the
    shifted tensor's range [0, 303], where steps of 1.2 hold nothing of its +-3 signal: the
    subtraction that takes the offset away is where the precision is seen lost."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.fc = nn.Linear(4, 3)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        y = self.conv2(self.relu(self.bn(self.conv1(x)))) + 300.0
        y -= 300.0
        y += x
        return self.fc(self.drop(y.mean((2, 3))))


def smooth(seed):
    generator = torch.Generator().manual_seed(seed)
    coarse = torch.randn(1, 4, 3, 3, generator=generator)
    return (nn.functional.interpolate(coarse, size=(12, 12), mode="bilinear"),)


@pytest.fixture(scope="module")
def quantized():
    from pipeline.chain.export import export
    from pipeline.chain.quantize import quantize

    model = Offset().eval()
    samples = [smooth(i) for i in range(6)]
    program = export(model, samples[0])
    converted, record = quantize(program, samples, bias_correction=False)
    return model, samples, converted, record


def test_the_layer_that_loses_the_signal_drops_most(quantized):
    _, _, _, record = quantized
    layers = record["layers"]
    worst = max((x for x in layers if x["drop_db"] is not None), key=lambda x: x["drop_db"])
    assert worst["op"] == "sub" and worst["drop_db"] > 20
    assert "test_layer_sqnr.py" in worst["source"] and "y -= 300.0" in worst["source"]
    assert layers[0]["op"] == "input" and layers[0]["drop_db"] is None
    relu = next(x for x in layers if x["op"] == "relu")  # fused with its conv: reads x
    assert relu["drop_db"] is not None


def test_the_last_layer_is_the_end_to_end_sqnr(quantized):
    """The output tensor's figure is the whole network's SQNR over the same samples."""
    from pipeline.quant.flow import _outputs, _sqnr_db
    from pipeline.quant.layer_sqnr import SAMPLES

    model, samples, converted, record = quantized
    used = samples[:SAMPLES]
    expected = _sqnr_db(_outputs(model, used), _outputs(converted.module(), used))
    assert record["layers"][-1]["op"] == "linear"
    assert record["layers"][-1]["sqnr_db"] == pytest.approx(expected, abs=0.02)
