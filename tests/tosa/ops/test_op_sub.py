"""SUB (aten.sub): the TOSA reference model against torch, over shapes and types."""

import pytest
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
    assert case.ops() == ops


def test_sub_fp32_matches_torch(tmp_path):
    case, report = run_case(SubScalar(0.5), [(1, 4, 5, 6)], tmp_path, FP)
    assert report["passed"]
    assert case.ops() == ["SUB"]
