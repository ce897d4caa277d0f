"""TABLE (int8 gelu, sigmoid, tanh, hardswish, silu, ...): reference model against torch."""

import pytest
import torch
from torch import nn

from pipeline.errors import UnsupportedOperatorError
from tests.tosa.lowering_cases import A16W8, FP, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class ConvThen(nn.Module):
    def __init__(self, activation):
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.activation = nn.Conv2d(3, 8, 3), activation

    def forward(self, x):
        return self.activation(self.conv(x))


class Unary(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


SHAPES = [
    pytest.param(nn.GELU(), ((1, 4, 5, 6), 3.0), id="gelu_erf"),
    pytest.param(nn.GELU("tanh"), ((2, 16), 3.0), id="gelu_tanh_rank2"),
    pytest.param(nn.Sigmoid(), ((1, 4, 5, 6), 4.0), id="sigmoid"),
    pytest.param(nn.Tanh(), ((1, 8), 2.0), id="tanh"),
    pytest.param(nn.Hardswish(), ((1, 4, 5, 6), 4.0), id="hardswish"),
    pytest.param(nn.LeakyReLU(0.1), ((1, 4, 5, 6), 2.0), id="leaky_relu"),
    pytest.param(ConvThen(nn.SiLU()), (1, 3, 8, 8), id="conv_silu"),
    pytest.param(nn.Mish(), ((1, 8), 3.0), id="mish"),
    pytest.param(Unary(torch.neg), ((2, 16), 4.0), id="neg"),
    pytest.param(Unary(torch.abs), ((1, 8), 2.0), id="abs"),
]


@pytest.mark.parametrize("module, shape", SHAPES)
def test_table_int8_matches_torch_exactly(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] == 0
    assert case.ops()[-1] == "TABLE"


def test_sigmoid_fp32_is_a_sigmoid(tmp_path):
    case, report = run_case(nn.Sigmoid(), [(1, 4, 5, 6)], tmp_path, FP)
    assert report["passed"]
    assert case.ops() == ["SIGMOID"]


@pytest.mark.parametrize("module, shape", SHAPES[:5])
def test_table_int16_interpolates_within_one_lsb(module, shape, tmp_path):
    """513-entry int16 table + RESCALE by 1/128 (Ethos-U85 only; U55 takes int8 tables)."""
    case, report = run_case(module, [shape], tmp_path, A16W8)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] <= 1
    assert case.ops() == ["TABLE", "RESCALE"]


@pytest.mark.needs_vela
@pytest.mark.parametrize("accelerator", ["ethos-u55-128", "ethos-u85-256"])
def test_int16_table_runs_on_the_npu(accelerator, tmp_path):
    from pipeline.stages.vela import run_vela
    from pipeline.tosa.npu_constraints import check_npu_constraints
    from tests.models.networks import vela_args

    case, _ = run_case(nn.Sigmoid(), [(1, 8)], tmp_path / "case", A16W8)
    check_npu_constraints(case.tosa, accelerator)
    run_vela(case.tosa, tmp_path / "vela", vela_args(accelerator))


def test_float_gelu_is_unsupported(tmp_path):
    with pytest.raises(UnsupportedOperatorError, match="a float input"):
        run_case(nn.GELU(), [(1, 8)], tmp_path, FP)
