"""mean over dims as int32 REDUCE_SUMs (quantized: the mean's own grid) or AVG_POOL2D (float): the TOSA reference model against torch,
over shapes/types."""

import pytest
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Mean(nn.Module):
    def __init__(self, dims, keepdim=False):
        super().__init__()
        self.dims, self.keepdim = dims, keepdim

    def forward(self, x):
        return x.mean(self.dims, keepdim=self.keepdim)


POOL, SUM = "AVG_POOL2D", "REDUCE_SUM"
SHAPES = [
    pytest.param(Mean((2, 3)), (1, 8, 5, 6), SUM, id="image_hw"),
    pytest.param(Mean((-1, -2), keepdim=True), (1, 4, 7, 3), SUM, id="image_hw_keepdim"),
    pytest.param(Mean(1, keepdim=True), (1, 6, 4, 4), SUM, id="image_channels_keepdim"),
    pytest.param(Mean((1, 3)), (1, 4, 3, 5), SUM, id="image_channels_width_adjacent_in_nhwc"),
    pytest.param(Mean(-1), (2, 5, 12), SUM, id="tokens_last"),
    pytest.param(Mean(1, keepdim=True), (1, 9, 16), SUM, id="tokens_sequence_keepdim"),
]


@pytest.mark.parametrize("module, shape, op", SHAPES)
def test_mean_int8_matches_torch(module, shape, op, tmp_path):
    """int8: the mean has its own grid, so int32 REDUCE_SUMs and one RESCALE into it (a pool
    would round to the input's grid first); one REDUCE_SUM per run of adjacent dims."""
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert case.ops().count(op) == 1
    assert "TRANSPOSE" not in case.ops()


@pytest.mark.parametrize("dtype, op", [(A16W8, POOL), (FP, POOL)])
def test_mean_other_types_match_torch(dtype, op, tmp_path):
    case, report = run_case(Mean((2, 3)), [(1, 4, 6, 6)], tmp_path, dtype)
    assert report["passed"]
    assert op in case.ops()


APART = [
    pytest.param(Mean((1, 2), keepdim=True), (1, 5, 7, 3), INT8, id="image_c_h_keepdim"),
    pytest.param(Mean((-3, -2)), (1, 5, 7, 3), A16W8, id="image_c_h_negative"),
    pytest.param(Mean((0, 2)), (3, 4, 6), INT8, id="rank3_first_last_but_one"),
    pytest.param(Mean((0, 2, -1), keepdim=True), (2, 3, 4, 5, 6), A16W8, id="rank5_three_runs"),
    pytest.param(Mean((1, 3, 5)), (2, 3, 2, 4, 2, 5), INT8, id="rank6_three_runs"),
    pytest.param(Mean((1, 2)), (2, 6, 5, 4), FP, id="fp_image_channels_height"),
]


@pytest.mark.parametrize("module, shape, dtype", APART)
def test_mean_over_dims_apart_in_the_layout_matches_torch(module, shape, dtype, tmp_path):
    """Integer: int32 REDUCE_SUM per run of adjacent dims, one RESCALE (one rounding like
    torch's), no TRANSPOSE; float: one pool per run."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    runs = 2 if len(shape) < 5 else 3
    op = POOL if dtype == FP else SUM
    assert case.ops().count(op) == runs
    assert "TRANSPOSE" not in case.ops()
    assert case.ops().count("RESCALE") == (0 if dtype == FP else 2)


def test_a_sum_of_more_values_than_ethos_u55_sums_at_once_is_split():
    """Vela sums at most 65536 values with a zero point on U55: 256 x 400 is two sums."""
    from pipeline.tosa.emit.reduction import MAX_SUMMED, Reduction

    r = Reduction([1, 2], (1, 256, 400), keepdim=True)
    assert r.steps(MAX_SUMMED) == [(256, 400, 1), (1, 256, 1)]
    assert r.steps() == [(1, 102400, 1)]


@pytest.mark.slow
@pytest.mark.needs_vela
@pytest.mark.parametrize(
    "shape, dtype",
    [
        pytest.param((1, 5, 7, 3), INT8, id="c_and_h_int8"),  # the reference's rand_12
        pytest.param((1, 5, 7, 3), A16W8, id="c_and_h_a16w8"),
        pytest.param((1, 256, 400), INT8, id="102400_values"),  # its randn_large_axis
    ],
)
def test_mean_over_dims_apart_runs_on_the_npu(shape, dtype, tmp_path):
    """Compiles wholly for U55 and U85."""
    from tests.tosa.lowering_cases import run_vela

    case, report = run_case(Mean((1, 2), keepdim=True), [shape], tmp_path, dtype)
    assert report["passed"]
    for variant, accelerator in (("u55", "ethos-u55-128"), ("u85", "ethos-u85-256")):
        figures = run_vela(case.variant(variant), accelerator, tmp_path / variant)
        assert figures["npu_op_share"] == 1.0
