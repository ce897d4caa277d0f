"""CONCAT (aten.cat): the TOSA reference model against torch, over shapes and types."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Cat(nn.Module):
    def __init__(self, dim, repeat_first=False):
        super().__init__()
        self.dim, self.repeat_first = dim, repeat_first

    def forward(self, x, y):
        return torch.cat([x, y, x] if self.repeat_first else [x, y], self.dim)


class ConvBranches(nn.Module):
    """Inception-style: two branches with their own producers joined on channels."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(3, 5, 1)

    def forward(self, x):
        return torch.cat([torch.relu(self.a(x)), self.b(x)], 1)


SHAPES = [
    pytest.param(Cat(1), [(1, 4, 5, 6), ((1, 2, 5, 6), 3.0)], id="nchw_channels_scales_differ"),
    pytest.param(Cat(-1, True), [(1, 4, 5, 6), ((1, 4, 5, 2), 3.0)], id="nchw_width_x_twice"),
    pytest.param(Cat(0), [(2, 6), ((3, 6), 0.5)], id="rank2_rows"),
]


@pytest.mark.parametrize("module, shapes", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_cat_matches_torch(module, shapes, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == ["CONCAT"]  # shared qparams: no RESCALE


def test_cat_of_conv_branches(tmp_path):
    case, report = run_case(ConvBranches(), [(1, 3, 8, 8)], tmp_path)
    assert report["passed"]
    assert case.ops()[-1] == "CONCAT"


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize(
    "dim, shape",
    [pytest.param(1, (2, 6, 3), id="stack_rank3_dim1"),
     pytest.param(0, (257,), id="stack_rank1_257"),
     pytest.param(-1, (1, 3, 4, 5), id="stack_nchw_last")],
)  # fmt: skip
def test_stack_is_a_concat(dim, shape, dtype, tmp_path):
    module = Fn(lambda m, x, y: torch.stack([x, y, x], dim))
    case, report = run_case(module, [shape, shape], tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert "CONCAT" in case.ops()
