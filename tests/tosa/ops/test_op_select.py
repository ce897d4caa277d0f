"""aten.select (and unbind, which the quantizer rewrites into selects) -> SLICE + RESHAPE."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Select(nn.Module):
    def __init__(self, dim, index):
        super().__init__()
        self.dim, self.index = dim, index

    def forward(self, x):
        return x.select(self.dim, self.index)


class UnbindAdd(nn.Module):
    def forward(self, x):
        a, b, c = x.unbind(1)
        return a + b - c


SHAPES = [
    pytest.param(Select(0, 2), (3, 4, 5), id="rank3_first_dim"),
    pytest.param(Select(1, -1), (1, 4, 5, 6), id="nhwc_channel_to_rank3"),
    pytest.param(Select(2, 1), (1, 2, 3, 4, 5), id="rank5"),
    pytest.param(Fn(lambda m, x: torch.select_copy(x, 1, 2)), (2, 6, 3), id="select_copy"),
    pytest.param(Fn(lambda m, x: torch.select_copy(x, 0, -1)), (800,), id="select_copy_rank1_800"),
]


@pytest.mark.parametrize("module, shape", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_select_matches_torch_exactly(module, shape, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0].get("max_abs_diff_int", 0) == 0
    assert "SLICE" in case.ops()


def test_unbind_is_one_slice_per_output(tmp_path):
    case, report = run_case(UnbindAdd(), [(2, 3, 8)], tmp_path)
    assert report["passed"]
    assert case.ops().count("SLICE") == 3
