import pytest
import torch
from torch import nn

from pipeline.tosa.passes import fold_batchnorm_pass
from tests.tosa.lowering_cases import count_targets, export_case, graph_before

pytestmark = pytest.mark.needs_torch
BN = "aten.batch_norm.default"


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


@pytest.mark.parametrize("conv_bias", [True, False], ids=["conv_bias", "no_conv_bias"])
def test_batchnorm_after_conv_is_folded_exactly(conv_bias, tmp_path):
    module = ConvBn(conv_bias).eval()
    case = export_case(module, [(1, 3, 6, 6)], tmp_path)
    gm, ctx = graph_before(case.path("model.pt2"), "fold_batchnorm", "TOSA-1.0+FP")
    assert count_targets(gm, BN) == 1
    fold_batchnorm_pass.run(gm, ctx)
    assert count_targets(gm, BN) == 0
    conv = next(n for n in gm.graph.nodes if str(n.target) == "aten.conv2d.default")
    x = torch.rand(1, 3, 6, 6)
    folded = nn.functional.conv2d(
        x, conv.args[1].meta["const"], conv.args[2].meta["const"], padding=1
    )
    torch.testing.assert_close(folded, module(x), rtol=1e-5, atol=1e-5)


class BnOnly(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        return self.bn(x)


def test_batchnorm_without_conv_is_left_alone(tmp_path):
    case = export_case(BnOnly(), [(1, 3, 4, 4)], tmp_path)
    gm, ctx = graph_before(case.path("model.pt2"), "fold_batchnorm", "TOSA-1.0+FP")
    fold_batchnorm_pass.run(gm, ctx)
    assert count_targets(gm, BN) == 1


def linear_bn(rank3=False):
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(8, 6), nn.BatchNorm1d(6 if not rank3 else 4), nn.ReLU())
    with torch.no_grad():
        module[1].running_mean.uniform_(-1, 1)
        module[1].running_var.uniform_(0.5, 2)
    return module.eval()


def test_batchnorm1d_after_linear_is_folded(tmp_path):
    """The autoencoder's linear + BatchNorm1d, lowered for the FP profile."""
    from tests.tosa.lowering_cases import FP, run_case

    gm, ctx = graph_before(
        export_case(linear_bn(), [(2, 8)], tmp_path / "pass").path("model.pt2"),
        "fold_batchnorm",
        "TOSA-1.0+FP",
    )
    fold_batchnorm_pass.run(gm, ctx)
    assert count_targets(gm, "aten.batch_norm.default") == 0
    _, report = run_case(linear_bn(), [(2, 8)], tmp_path / "case", FP)
    assert report["passed"]


def test_batchnorm1d_over_a_linear_of_rank3_is_left_alone(tmp_path):
    case = export_case(linear_bn(rank3=True), [(2, 4, 8)], tmp_path)
    gm, ctx = graph_before(case.path("model.pt2"), "fold_batchnorm", "TOSA-1.0+FP")
    fold_batchnorm_pass.run(gm, ctx)
    assert count_targets(gm, "aten.batch_norm.default") == 1
