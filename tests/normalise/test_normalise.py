"""Normalisation of exported programs: functional ops, no no-ops, constants folded, BatchNorm
folded or written as MUL + ADD - every program, whatever else it holds."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from pipeline.chain.export import normalise
from pipeline.normalise import is_normal
from pipeline.tosa.registry import lowered_targets
from tests.tosa.lowering_cases import INT8, run_case

pytestmark = pytest.mark.needs_torch


def targets(program) -> list[str]:
    return [str(n.target) for n in program.graph.nodes if n.op == "call_function"]


class UserStyle(nn.Module):
    """What users export: in-place activations, ``out += identity``, dropout, ``.to``,
    BatchNorm1d after a Linear, constants built in forward, a weight-normed layer."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.utils.parametrizations.weight_norm(nn.Linear(8, 16))
        self.bn1 = nn.BatchNorm1d(16)
        for bn in (self.bn, self.bn1):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        y = self.bn(self.conv(x))
        y = F.relu(y, inplace=True)
        identity = y
        y = F.hardswish(y.clone(), inplace=True)
        y += identity
        y = F.hardtanh_(y, -2.0, 2.0)
        y = self.drop(y.mean((2, 3)))
        y = self.bn1(self.fc(y)).to(torch.float32)
        positions = torch.arange(16).unsqueeze(0).float()
        y = y + positions * 0.01 + torch.zeros(1, 16) * torch.ones_like(y)
        return F.silu(y, inplace=True)


def test_user_style_program_is_normalised_and_keeps_its_values():
    model = UserStyle().eval()
    x = torch.randn(2, 3, 8, 8)
    program = normalise(torch.export.export(model, (x,)))
    ops = targets(program)
    for gone in ("relu_", "hardswish_", "add_", "hardtanh_", "silu_", "clone", "dropout",
                 "_assert_tensor_metadata", "arange", "full", "zeros", "batch_norm",
                 "_weight_norm", "_to_copy", "ones_like"):
        assert not any(f"aten.{gone}." in op for op in ops), (gone, ops)
    assert ops.count("aten.linear.default") == 1 and ops.count("aten.conv2d.default") == 1
    assert is_normal(program, lowered_targets())
    torch.testing.assert_close(program.module()(x), model(x), rtol=1e-5, atol=1e-5)


def test_normal_program_is_returned_as_is():
    program = normalise(torch.export.export(nn.Sequential(nn.Linear(4, 4)), (torch.randn(1, 4),)))
    assert normalise(program) is program


class StandaloneBatchNorm(nn.Module):
    """A BatchNorm that follows no conv/linear (an input normalisation layer)."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(4)
        self.bn.running_mean.copy_(torch.tensor([0.1, -0.2, 0.3, 0.0]))
        self.bn.running_var.copy_(torch.tensor([0.5, 1.5, 2.0, 1.0]))
        self.conv = nn.Conv2d(4, 4, 1)

    def forward(self, x):
        return self.conv(self.bn(x))


def test_standalone_batchnorm_becomes_mul_add_and_builds(tmp_path):
    model = StandaloneBatchNorm().eval()
    x = torch.randn(1, 4, 6, 6)
    program = normalise(torch.export.export(model, (x,)))
    assert "aten.mul.Tensor" in targets(program) and "aten.add.Tensor" in targets(program)
    torch.testing.assert_close(program.module()(x), model(x))
    case, report = run_case(model, [(1, 4, 6, 6)], tmp_path, INT8)
    assert report["passed"]


class InplaceOnly(nn.Module):
    """Only an in-place relu and ``+=``: builds without any unrelated layer to trigger a
    clean-up (it used to need a softmax in the model)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        y += x.mean(1, keepdim=True)
        return torch.relu_(y)


def test_inplace_model_builds(tmp_path):
    case, report = run_case(InplaceOnly(), [(1, 3, 8, 8)], tmp_path, INT8)
    assert report["passed"]


class ConvBn(nn.Module):
    def __init__(self, conv_bias=True):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 3, padding=1, bias=conv_bias)
        self.bn = nn.BatchNorm2d(4)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-1, 1)

    def forward(self, x):
        return self.bn(self.conv(x))


def linear_bn(rank3=False):
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(8, 6), nn.BatchNorm1d(6 if not rank3 else 4), nn.ReLU())
    with torch.no_grad():
        module[1].running_mean.uniform_(-1, 1)
        module[1].running_var.uniform_(0.5, 2)
    return module.eval()


@pytest.mark.parametrize("module, shape, kept", [
    pytest.param(ConvBn(True), (1, 3, 6, 6), "aten.conv2d.default", id="conv_bias"),
    pytest.param(ConvBn(False), (1, 3, 6, 6), "aten.conv2d.default", id="no_conv_bias"),
    pytest.param(linear_bn(), (2, 8), "aten.linear.default", id="linear_bn1d"),
])
def test_batchnorm_is_folded_into_the_layer_before_it_exactly(module, shape, kept):
    """Folded into the weights and bias: no BatchNorm, no extra operator; the output of a
    graph whose last value was the BatchNorm's is the conv itself."""
    module = module.eval()
    x = torch.rand(shape)
    program = normalise(torch.export.export(module, (x,)))
    ops = targets(program)
    assert not any("batch_norm" in op for op in ops)
    assert "aten.mul.Tensor" not in ops and ops.count(kept) == 1
    torch.testing.assert_close(program.module()(x), module(x), rtol=1e-5, atol=1e-5)


def test_batchnorm1d_over_a_rank3_linear_becomes_mul_add():
    """BatchNorm1d of [N, C, L] normalises C, not the linear's features L: not foldable."""
    module = linear_bn(rank3=True)
    x = torch.rand(2, 4, 8)
    program = normalise(torch.export.export(module, (x,)))
    ops = targets(program)
    assert "aten.mul.Tensor" in ops and "aten.add.Tensor" in ops
    torch.testing.assert_close(program.module()(x), module(x), rtol=1e-5, atol=1e-5)


def test_batchnorm1d_after_linear_builds_for_the_fp_profile(tmp_path):
    """The autoencoder's linear + BatchNorm1d, lowered for the FP profile."""
    from tests.tosa.lowering_cases import FP

    _, report = run_case(linear_bn(), [(2, 8)], tmp_path, FP)
    assert report["passed"]
