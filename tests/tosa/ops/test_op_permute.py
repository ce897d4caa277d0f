"""TRANSPOSE (aten.permute, transpose.int): the TOSA reference model against torch."""

import pytest
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Permute(nn.Module):
    def __init__(self, *dims):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return x.permute(*self.dims)


class Transpose(nn.Module):
    def forward(self, x):
        return x.transpose(-2, -1)


class SplitHeads(nn.Module):
    """[batch, tokens, heads * dim] -> [batch, heads, tokens, dim] (rank-4 NHWC output)."""

    def forward(self, x):
        return x.reshape(1, 6, 2, 4).permute(0, 2, 1, 3)


SHAPES = [
    pytest.param(Permute(0, 2, 3, 1), (1, 3, 4, 5), ["TRANSPOSE"], id="nchw_to_nhwc_4d"),
    pytest.param(Transpose(), (4, 1, 5), ["RESHAPE"], id="unit_dims_only_is_a_view"),
    pytest.param(Transpose(), (1, 4, 6, 3), ["TRANSPOSE"], id="nhwc_swap_h_w"),
    pytest.param(Permute(2, 0, 1), (3, 4, 5), ["TRANSPOSE"], id="rank3"),
    pytest.param(Transpose(), (5, 7), ["TRANSPOSE"], id="rank2"),
    pytest.param(SplitHeads(), (1, 6, 8), ["RESHAPE", "TRANSPOSE"], id="split_heads"),
]


@pytest.mark.parametrize("module, shape, ops", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_permute_matches_torch_exactly(module, shape, ops, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == ops


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize(
    "fn, shape",
    [pytest.param(lambda m, x: nn.functional.pixel_shuffle(x, 2), (1, 8, 3, 4), id="shuffle_2"),
     pytest.param(lambda m, x: nn.functional.pixel_unshuffle(x, 2), (1, 2, 6, 4), id="unshuffle_2"),
     pytest.param(lambda m, x: nn.PixelShuffle(3)(x), (2, 9, 1, 5), id="shuffle_3_batch2")],
)  # fmt: skip
def test_pixel_shuffle_is_exact(fn, shape, dtype, tmp_path):
    case, report = run_case(Fn(fn), [shape], tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
