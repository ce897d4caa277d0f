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

    x, y = torch.rand(1, 3, 6, 6), torch.rand(1, 4, 6, 6)
    module = torch.export.export(Net().eval(), (x, y)).module(check_guards=False)
    EthosUQuantizer("int8").annotate(module)
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
    assert nodes["cumsum"] is None  # left float: the lowering reports it, never a fallback
