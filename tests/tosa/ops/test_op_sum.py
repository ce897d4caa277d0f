"""sum over dims as int32 REDUCE_SUM: the TOSA reference model against torch, over shapes and
types."""

import pytest
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Sum(nn.Module):
    def __init__(self, dims=None, keepdim=False):
        super().__init__()
        self.dims, self.keepdim = dims, keepdim

    def forward(self, x):
        if self.dims is None:
            return x.sum()
        return x.sum(self.dims, keepdim=self.keepdim)


SHAPES = [
    pytest.param(Sum((2, 3)), (1, 8, 5, 6), id="image_hw"),
    pytest.param(Sum((-1, -2), keepdim=True), (1, 4, 7, 3), id="image_hw_keepdim"),
    pytest.param(Sum(1, keepdim=True), (1, 6, 4, 4), id="image_channels_keepdim"),
    pytest.param(Sum((1, 3)), (1, 4, 3, 5), id="image_channels_width_adjacent_in_nhwc"),
    pytest.param(Sum(-1), (2, 5, 12), id="tokens_last"),
    pytest.param(Sum(-1, keepdim=True), (3, 16), id="rank2_last_keepdim"),
    pytest.param(Sum(1, keepdim=True), (1, 9, 16), id="tokens_sequence_keepdim"),
    pytest.param(Sum(), (2, 3, 4), id="all"),
]


@pytest.mark.parametrize("module, shape", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_sum_matches_torch(module, shape, dtype, tmp_path):
    """Integer: widened to int32, summed, one RESCALE (one rounding, like torch)."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    ops = [o for o in case.ops() if o != "RESHAPE"]
    assert ops == (["REDUCE_SUM"] if dtype == FP else ["RESCALE", "REDUCE_SUM", "RESCALE"])
    assert "TRANSPOSE" not in case.ops()


APART = [
    pytest.param(Sum((1, 2)), (1, 4, 6, 6), INT8, id="image_channels_height"),
    pytest.param(Sum((0, -1), keepdim=True), (3, 4, 5), A16W8, id="rank3_negative_keepdim"),
    pytest.param(Sum((1, 2)), (2, 3, 4, 5), FP, id="fp_image_channels_height"),
]


@pytest.mark.parametrize("module, shape, dtype", APART)
def test_sum_over_dims_apart_in_the_layout_matches_torch(module, shape, dtype, tmp_path):
    """One REDUCE_SUM per run of adjacent dims, the int32 sums rescaled once."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    ops = [o for o in case.ops() if o != "RESHAPE"]
    sums = ["REDUCE_SUM", "REDUCE_SUM"]
    assert ops == (sums if dtype == FP else ["RESCALE", *sums, "RESCALE"])
