import pytest
import torch
from torch import nn

pytestmark = pytest.mark.needs_torch


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4, 2)

    def forward(self, x, y):
        a = torch.relu(self.conv(x))
        b = nn.functional.max_pool2d(a + y, 2)
        c = torch.cumsum(b, dim=1)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(c, 1), 1))


def annotated_graph():
    from pipeline.quant.annotators import KEY
    from pipeline.quant.quantizer import EthosUQuantizer
    from pipeline.tosa.registry import quant_rules

    x, y = torch.rand(1, 3, 6, 6), torch.rand(1, 4, 6, 6)
    module = torch.export.export(Net().eval(), (x, y)).module(check_guards=False)
    EthosUQuantizer("int8", rules=quant_rules()).annotate(module)
    return {n.name: n.meta.get(KEY) for n in module.graph.nodes if n.op == "call_function"}


def test_fused_conv_relu_quantizes_only_the_relu_output():
    nodes = annotated_graph()
    assert len(nodes["conv2d"].input_qspec_map) == 3  # input, weight, bias
    assert nodes["conv2d"].output_qspec is None
    assert nodes["relu"].output_qspec is not None


def test_shared_and_unsupported_ops():
    from torchao.quantization.pt2e.quantizer import SharedQuantizationSpec

    nodes = annotated_graph()
    assert isinstance(nodes["max_pool2d"].output_qspec, SharedQuantizationSpec)
    assert isinstance(nodes["flatten"].output_qspec, SharedQuantizationSpec)
    assert len(nodes["add"].input_qspec_map) == 2
    assert nodes["cumsum"].output_qspec is not None  # a reduction: qparams of its own


class Products(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.rand(4, 3)), nn.Parameter(torch.rand(3))

    def forward(self, x, y):
        weighted = torch.addmm(self.bias, x, self.weight) + x @ self.weight
        return torch.minimum(torch.mm(x, y), weighted).sum(-1)


def test_products_min_and_sum():
    """addmm/x @ W with a parameter W [in, out]: W per channel along axis 1, bias derived;
    mm of activations like other binaries; minimum shares; sum gets its own output."""
    from torchao.quantization.pt2e.quantizer import (
        DerivedQuantizationSpec,
        SharedQuantizationSpec,
    )

    from pipeline.quant.annotators import KEY
    from pipeline.quant.quantizer import EthosUQuantizer
    from pipeline.tosa.registry import quant_rules

    x, y = torch.rand(2, 4), torch.rand(4, 3)
    module = torch.export.export(Products(), (x, y)).module(check_guards=False)
    EthosUQuantizer("int8", rules=quant_rules()).annotate(module)
    nodes = {n.name: n for n in module.graph.nodes}
    for name in ("addmm", "matmul"):
        specs = nodes[name].meta[KEY].input_qspec_map
        assert specs[nodes["weight"]].ch_axis == 1
    assert isinstance(
        nodes["addmm"].meta[KEY].input_qspec_map[nodes["bias"]], DerivedQuantizationSpec
    )
    assert len(nodes["mm"].meta[KEY].input_qspec_map) == 2
    minimum = nodes["minimum"].meta[KEY]
    assert isinstance(minimum.output_qspec, SharedQuantizationSpec)
    assert isinstance(minimum.input_qspec_map[nodes["add"]], SharedQuantizationSpec)
    assert nodes["sum_1"].meta[KEY].output_qspec is not None
