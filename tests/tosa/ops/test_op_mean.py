"""mean over dims as AVG_POOL2D: the TOSA reference model against torch, over shapes/types."""

import pytest
from torch import nn

from pipeline.errors import UnsupportedOperatorError
from tests.tosa.lowering_cases import A16W8, FP, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Mean(nn.Module):
    def __init__(self, dims, keepdim=False):
        super().__init__()
        self.dims, self.keepdim = dims, keepdim

    def forward(self, x):
        return x.mean(self.dims, keepdim=self.keepdim)


POOL, SUM = "AVG_POOL2D", "REDUCE_SUM"
SHAPES = [
    pytest.param(Mean((2, 3)), (1, 8, 5, 6), POOL, id="image_hw"),
    pytest.param(Mean((-1, -2), keepdim=True), (1, 4, 7, 3), POOL, id="image_hw_keepdim"),
    pytest.param(Mean(1, keepdim=True), (1, 6, 4, 4), SUM, id="image_channels_keepdim"),
    pytest.param(Mean((1, 3)), (1, 4, 3, 5), SUM, id="image_channels_width_adjacent_in_nhwc"),
    pytest.param(Mean(-1), (2, 5, 12), SUM, id="tokens_last"),
    pytest.param(Mean(1, keepdim=True), (1, 9, 16), POOL, id="tokens_sequence_keepdim"),
]


@pytest.mark.parametrize("module, shape, op", SHAPES)
def test_mean_int8_matches_torch(module, shape, op, tmp_path):
    """Over the innermost TOSA dim a REDUCE_SUM (native over depth on Ethos-U), else a pool."""
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert case.ops().count(op) == 1
    assert "TRANSPOSE" not in case.ops()


@pytest.mark.parametrize("dtype", [A16W8, FP])
def test_mean_other_types_match_torch(dtype, tmp_path):
    case, report = run_case(Mean((2, 3)), [(1, 4, 6, 6)], tmp_path, dtype)
    assert report["passed"]
    assert "AVG_POOL2D" in case.ops()


def test_mean_over_non_adjacent_dims_is_unsupported(tmp_path):
    with pytest.raises(UnsupportedOperatorError, match="dims not adjacent"):
        run_case(Mean((1, 2)), [(1, 4, 6, 6)], tmp_path)  # C and H: apart in NHWC
