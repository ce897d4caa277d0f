"""TABLE (int8 gelu, sigmoid, tanh, hardswish, silu, ...) and their float forms (FP profile):
reference model against torch."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, random_inputs, run_case

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


def positive(fn):
    """``fn`` on inputs moved into its domain (log, sqrt, rsqrt, reciprocal)."""
    return Unary(lambda x: fn(torch.abs(x) + 0.05))


# One case per TABLE target (test_every_table_target_has_a_float_case checks): the float form
# in TOSA FP operators, compared with torch within verify's FP tolerance.
FLOAT_CASES = [
    pytest.param(nn.GELU(), ((1, 4, 5, 6), 4.0), ["MUL", "ERF", "ADD", "MUL", "MUL"], id="gelu_erf"),
    pytest.param(nn.GELU("tanh"), ((2, 16), 4.0), ["MUL", "MUL", "ADD", "MUL", "TANH", "ADD", "MUL", "MUL"], id="gelu_tanh_rank2"),
    pytest.param(nn.Sigmoid(), ((1, 4, 5, 6), 6.0), ["SIGMOID"], id="sigmoid"),
    pytest.param(nn.Tanh(), ((1, 8), 3.0), ["TANH"], id="tanh"),
    pytest.param(nn.Hardswish(), ((1, 4, 5, 6), 5.0), ["MUL", "ADD", "CLAMP", "MUL"], id="hardswish"),
    pytest.param(nn.Hardsigmoid(), ((1, 4, 5, 6), 5.0), ["MUL", "ADD", "CLAMP"], id="hardsigmoid"),
    pytest.param(ConvThen(nn.SiLU()), (1, 3, 8, 8), ["CONV2D", "SIGMOID", "MUL"], id="conv_silu"),
    pytest.param(nn.ELU(), ((1, 4, 5, 6), 3.0), ["CLAMP", "EXP", "ADD", "MUL", "CLAMP", "ADD"], id="elu"),
    pytest.param(Unary(lambda x: torch.ops.aten.elu(x, 0.5, 2.0, 1.5)), ((2, 16), 3.0), None, id="elu_scaled"),
    pytest.param(nn.LeakyReLU(0.1), ((1, 4, 5, 6), 2.0), ["MUL", "MAXIMUM"], id="leaky_relu"),
    pytest.param(nn.LeakyReLU(-0.5), ((2, 16), 2.0), ["MUL", "MAXIMUM"], id="leaky_relu_negative"),
    pytest.param(nn.LeakyReLU(3.0), ((2, 16), 2.0), ["MUL", "MINIMUM"], id="leaky_relu_steep"),
    pytest.param(Unary(torch.exp), ((1, 4, 5, 6), 4.0), ["EXP"], id="exp"),
    pytest.param(positive(torch.reciprocal), ((1, 8), 2.0), ["ABS", "ADD", "RECIPROCAL"], id="reciprocal"),
    pytest.param(positive(torch.rsqrt), ((1, 8), 2.0), ["ABS", "ADD", "RSQRT"], id="rsqrt"),
    pytest.param(Unary(lambda x: torch.sqrt(torch.relu(x))), ((1, 4, 5, 6), 4.0), ["CLAMP", "POW"], id="sqrt_with_zeros"),
    pytest.param(positive(torch.log), ((2, 16), 3.0), ["ABS", "ADD", "LOG"], id="log"),
    pytest.param(Unary(torch.erf), ((1, 8), 3.0), ["ERF"], id="erf"),
    pytest.param(Unary(torch.abs), ((1, 8), 2.0), ["ABS"], id="abs"),
    pytest.param(Unary(torch.neg), ((2, 16), 4.0), ["NEGATE"], id="neg"),
    pytest.param(nn.Mish(), ((1, 4, 5, 6), 6.0), None, id="mish"),
    pytest.param(nn.Softplus(), ((1, 4, 5, 6), 30.0), None, id="softplus_large_inputs"),
    pytest.param(nn.Softplus(2.0, 5.0), ((2, 16), 6.0), None, id="softplus_beta_threshold"),
]  # fmt: skip


@pytest.mark.parametrize("module, shape, ops", FLOAT_CASES)
def test_table_functions_in_float_match_torch(module, shape, ops, tmp_path):
    case, report = run_case(module, [shape], tmp_path, FP)
    assert report["passed"]
    output = report["outputs"][0]
    assert output["max_abs_diff"] <= output["tolerance"]
    assert "TABLE" not in case.ops()
    if ops is not None:
        assert case.ops() == ops


def test_every_table_target_has_a_float_case():
    from pipeline.tosa.fp_emit import FLOAT_FORMS
    from pipeline.tosa.ops.op_table import TABLE_TARGETS

    assert set(FLOAT_FORMS) == set(TABLE_TARGETS)
    covered = set()
    for module, shape, _ in (p.values for p in FLOAT_CASES):
        program = torch.export.export(module.eval(), random_inputs([shape], 0))
        covered |= {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert set(TABLE_TARGETS) <= covered


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

