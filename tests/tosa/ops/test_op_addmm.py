"""addmm that is no linear layer - a computed second operand (attention written by hand),
alpha / beta other than 1, beta = 0 - written out by the normalisation as ``beta * bias +
alpha * (a @ b)``; a linear addmm (constant weight and bias, alpha = beta = 1) stays one
CONV2D. Against torch in the TOSA reference model, and placed on both NPUs."""

import pytest
import torch
from torch import nn

from pipeline.ethosu.placement import check_npu_constraints
from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, run_case, run_vela

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Scaled(nn.Module):
    """A parameter weight, but scaled sums: ``torch.addmm(b, x, W, alpha=2.0)``."""

    def __init__(self, **scales):
        super().__init__()
        torch.manual_seed(0)
        self.w, self.b, self.scales = (
            nn.Parameter(torch.randn(5, 4)),
            nn.Parameter(torch.randn(4)),
            scales,
        )

    def forward(self, x):
        return torch.addmm(self.b, x, self.w, **self.scales)


SHAPES = [(3, 4), (3, 5), (5, 4)]
CASES = [
    pytest.param(Fn(lambda m, b, x, y: torch.addmm(b, x, y)), SHAPES, "MATMUL", id="computed"),
    pytest.param(Fn(lambda m, b, x, y: torch.addmm(b, x, y, beta=2.0, alpha=0.5)), SHAPES,
                 "MATMUL", id="alpha_beta"),
    pytest.param(Fn(lambda m, b, x, y: torch.addmm(b, x, y, beta=0.0)), SHAPES, "MATMUL",
                 id="beta_0"),
    pytest.param(Fn(lambda m, b, x, y: torch.addmm(b * float("nan"), x, y, beta=0)), SHAPES,
                 "MATMUL", id="beta_0_nan_bias_ignored"),
    pytest.param(Fn(lambda m, b, x, y: torch.addmm(b, x, y, alpha=0.0)), SHAPES, "MATMUL",
                 id="alpha_0"),
    pytest.param(Scaled(), [(3, 5)], "CONV2D", id="linear"),
    pytest.param(Scaled(alpha=2.0), [(3, 5)], "CONV2D", id="linear_alpha"),
]  # fmt: skip


@pytest.mark.parametrize("module, shapes, product", CASES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_addmm_forms_match_torch(module, shapes, product, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    assert product in case.ops()
    if module is CASES[5].values[0]:  # the linear layer alone: nothing but the CONV2D path
        assert "ADD" not in case.ops() and "MATMUL" not in case.ops()


@pytest.mark.needs_vela
@pytest.mark.parametrize("accelerator", ["ethos-u55-128", "ethos-u85-256"])
def test_written_out_addmm_runs_on_the_npu(accelerator, tmp_path):
    module, shapes, _ = CASES[1].values
    case, _ = run_case(module, shapes, tmp_path / "case", INT8)
    variant = case.variant(accelerator.split("-")[1])
    check_npu_constraints(variant, accelerator)
    assert run_vela(variant, accelerator, tmp_path / "vela")["npu_op_share"] == 1.0
