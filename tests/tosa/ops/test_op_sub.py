"""SUB (aten.sub): the TOSA reference model against torch, over shapes and types."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Sub(nn.Module):
    def forward(self, x, y):
        return x - y


class SubScalar(nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, x):
        return x - self.value


SHAPES = [
    pytest.param(Sub(), [(1, 4, 5, 6), ((1, 4, 5, 6), 3.0)], ["RESCALE", "RESCALE", "SUB", "RESCALE"], id="nchw_scales_differ"),
    pytest.param(Sub(), [(3, 7), ((3, 1), 0.2)], ["RESCALE", "RESCALE", "SUB", "RESCALE"], id="rank2_broadcast"),
    pytest.param(SubScalar(1.0), [(1, 4, 5, 6)], ["RESCALE", "SUB", "RESCALE"], id="scalar"),
]  # fmt: skip


@pytest.mark.parametrize("module, shapes, ops", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_sub_matches_torch(module, shapes, ops, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    if dtype == INT8 and isinstance(module, SubScalar):
        ops = ["TABLE"]  # a function of one int8 input: one exact TABLE
    assert case.ops() == ops


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


# alpha and the reversed forms, as users write them (rsub is sub with the number first).
ALPHA = [
    pytest.param(Fn(lambda x, y: torch.sub(x, y, alpha=0.5)), [(2, 3, 8), (1, 3, 1)], id="alpha_broadcast"),
    pytest.param(Fn(lambda x, y: torch.sub(x, y, alpha=-2)), [(800,), (800,)], id="negative_alpha_800"),
    pytest.param(Fn(lambda x: torch.sub(x, 3, alpha=2)), [(4, 257)], id="number_alpha"),
    pytest.param(Fn(lambda x: 1 - x), [(2, 3, 4, 5, 6)], id="rsub_rank5"),
    pytest.param(Fn(lambda x: torch.rsub(x, 2.0, alpha=3)), [(1, 1)], id="rsub_alpha_size1"),
    pytest.param(Fn(lambda x, y: torch.rsub(x, y)), [(3, 7), (3, 7)], id="rsub_tensors"),
    pytest.param(Fn(lambda x: torch.ops.aten.sub.Scalar(x, 0.5)), [(3, 5)], id="sub_Scalar"),
    pytest.param(Fn(lambda x, y: x.clone().sub_(y, alpha=2)), [(1, 8, 8), (1, 8, 8)], id="inplace_alpha"),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize("module, shapes", ALPHA)
def test_sub_alpha_and_reversed_forms(module, shapes, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0].get("max_abs_diff_int", 0) <= (0 if dtype == INT8 else 1)


def test_sub_fp32_matches_torch(tmp_path):
    case, report = run_case(SubScalar(0.5), [(1, 4, 5, 6)], tmp_path, FP)
    assert report["passed"]
    assert case.ops() == ["SUB"]
