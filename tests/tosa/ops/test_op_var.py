"""var / std (aten.var.correction) and vector norms, written out before quantization
(``pipeline/normalise/reductions.py``: the mean of squared deviations times n / (n - correction);
a sum of squares, of |x|, a max of |x|): against torch in the TOSA reference model, and
placed on both NPUs."""

import pytest
import torch
from torch import nn

from pipeline.ethosu.placement import check_npu_constraints
from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, run_case, run_vela

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class HandNorm(nn.Module):
    """A normalisation written by hand, as in many downloaded models."""

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)
        return (x - mean) / std


CASES = [
    pytest.param(Fn(lambda m, x: x.var(dim=-1, keepdim=True)), (1, 4, 8), id="var_last_keepdim"),
    pytest.param(Fn(lambda m, x: torch.std(x, dim=1)), (2, 6, 5), id="std_dim1"),
    pytest.param(Fn(lambda m, x: x.var()), (3, 4), id="var_all"),
    pytest.param(
        Fn(lambda m, x: torch.var(x, (2, 3), correction=0)), (1, 3, 4, 5), id="var_hw_pop"
    ),
    pytest.param(HandNorm(), (2, 3, 16), id="hand_written_norm"),
]


@pytest.mark.parametrize("module, shape", CASES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_var_std_match_torch(module, shape, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert "MUL" in case.ops()  # the squared deviations


@pytest.mark.needs_vela
@pytest.mark.parametrize("accelerator", ["ethos-u55-128", "ethos-u85-256"])
def test_std_runs_on_the_npu(accelerator, tmp_path):
    case, _ = run_case(CASES[1].values[0], [CASES[1].values[1]], tmp_path / "case", INT8)
    check_npu_constraints(case.tosa, accelerator)
    assert run_vela(case.tosa, accelerator, tmp_path / "vela")["npu_op_share"] == 1.0


NORMS = [
    pytest.param(Fn(lambda m, x: torch.linalg.vector_norm(x, dim=-1, keepdim=True)), (2, 3, 8),
                 id="l2_last"),
    pytest.param(Fn(lambda m, x: torch.linalg.vector_norm(x, ord=1, dim=(1, 2))), (2, 3, 8),
                 id="l1_two_dims"),
    pytest.param(Fn(lambda m, x: x.norm(p=float("inf"), dim=1)), (2, 6), id="max_norm"),
    pytest.param(Fn(lambda m, x: nn.functional.normalize(x, dim=-1)), (2, 4, 8),
                 id="normalize"),
    pytest.param(Fn(lambda m, x: torch.split_copy(x, 2, 1)[1]), (1, 5, 4), id="split_copy"),
]  # fmt: skip


@pytest.mark.parametrize("module, shape", NORMS)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_vector_norms_match_torch(module, shape, dtype, tmp_path):
    """linalg.vector_norm written out (sqrt of a sum of squares, a sum or max of |x|), as
    F.normalize uses it; split_copy as split."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert "SLICE" in case.ops() or any(op.startswith("REDUCE") for op in case.ops())


@pytest.mark.parametrize(
    "module, shape",
    [
        pytest.param(Fn(lambda m, x: torch.mean(x)), (3, 4), id="mean_of_everything"),
        pytest.param(Fn(lambda m, x: torch.detach_copy(x) * 2), (3, 4), id="detach_copy"),
        pytest.param(
            Fn(lambda m, x: (torch.ops.aten.div.Scalar(x, 2.0), torch.ops.aten.mul.Scalar(x, 3))),
            (3, 4),
            id="scalar_forms",
        ),
    ],
)
@pytest.mark.parametrize("dtype", [INT8, FP])
def test_other_forms_of_the_same_calls(module, shape, dtype, tmp_path):
    """x.mean() is the mean over every dim, detach_copy a copy, mul/div.Scalar the Tensor
    forms: the calls the quantizer and the lowering already take."""
    _, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
