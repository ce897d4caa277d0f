"""MAX_POOL2D: the TOSA reference model against torch, over shapes and types (exact)."""

import pytest
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

SHAPES = [
    pytest.param(nn.MaxPool2d(2), (1, 4, 8, 8), ["MAX_POOL2D"], id="2x2_s2"),
    pytest.param(nn.MaxPool2d(3, 2, 1), (1, 3, 9, 9), ["MAX_POOL2D"], id="3x3_s2_pad1_odd"),
    pytest.param(nn.MaxPool2d(2), (2, 3, 7, 6), ["SLICE", "MAX_POOL2D"], id="2x2_s2_crops_row"),
    pytest.param(nn.MaxPool2d((1, 3), 1), (1, 2, 4, 9), ["MAX_POOL2D"], id="1x3_s1_rect"),
]


@pytest.mark.parametrize("module, shape, ops", SHAPES)
def test_max_pool2d_int8_matches_torch(module, shape, ops, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] == 0  # max of integers: exact
    assert case.ops() == ops


@pytest.mark.parametrize("dtype", [A16W8, FP])
def test_max_pool2d_other_types_match_torch(dtype, tmp_path):
    case, report = run_case(nn.MaxPool2d(2), [(1, 4, 8, 8)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == ["MAX_POOL2D"]


DILATED = [
    pytest.param(nn.MaxPool2d(2, dilation=2), (1, 2, 8, 8), id="k2_d2"),
    pytest.param(nn.MaxPool2d(3, stride=1, dilation=2), (1, 3, 9, 9), id="k3_s1_d2"),
    pytest.param(nn.MaxPool2d(2, stride=2, padding=1, dilation=(2, 1)), (1, 3, 8, 8),
                 id="padded_d2x1"),
]  # fmt: skip


@pytest.mark.parametrize("module, shape", DILATED)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_dilated_max_pool_is_the_maximum_of_its_taps(module, shape, dtype, tmp_path):
    """Each tap a strided slice (padding -inf), MAXIMUM of operands sharing one
    quantization: exactly torch's values."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0].get("max_abs_diff_int", 0) == 0
    assert "MAXIMUM" in case.ops()


def test_dilated_ceil_mode_max_pool_is_named(tmp_path):
    with pytest.raises(Exception, match=r"max_pool2d\.default with dilation=\[2, 2\]"):
        run_case(nn.MaxPool2d(2, dilation=2, ceil_mode=True), [(1, 2, 9, 9)], tmp_path)


CEIL = [
    pytest.param(nn.MaxPool2d(3, 2, ceil_mode=True), (1, 4, 8, 8), id="3x3_s2_ceil"),
    pytest.param(nn.MaxPool2d(2, 2, ceil_mode=True), (1, 4, 7, 9), id="2x2_s2_ceil_odd"),
    pytest.param(nn.MaxPool2d(3, 2, 1, ceil_mode=True), (1, 4, 10, 7), id="3x3_s2_pad1_ceil"),
]


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize("module, shape", CEIL)
def test_max_pool2d_ceil_mode_pads_the_last_window(module, shape, dtype, tmp_path):
    """ceil_mode: the last window hangs over the input; extra bottom/right padding reaches it."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    if dtype != FP:
        assert report["outputs"][0]["max_abs_diff_int"] == 0
    assert case.ops() == ["MAX_POOL2D"]


class UnbatchedPools(nn.Module):
    """Pools of a (C, H, W) image, as a model fed one image without a batch dimension writes
    them: max, average and adaptive average."""

    def forward(self, image):
        image = nn.functional.max_pool2d(image, 2)
        image = nn.functional.avg_pool2d(image, 3, stride=1, padding=1)
        return nn.functional.adaptive_avg_pool2d(image, 2) + 1.0


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_unbatched_pools_pool_a_batch_of_one(dtype, tmp_path):
    """Normalisation reshapes a (C, H, W) pool's input to (1, C, H, W) and back."""
    case, report = run_case(UnbatchedPools(), [(3, 8, 8)], tmp_path, dtype)
    assert report["passed"]
    assert {"MAX_POOL2D", "AVG_POOL2D"} <= set(case.ops())


ADAPTIVE = [
    pytest.param(nn.AdaptiveMaxPool2d((3, 5)), (2, 4, 7, 6), "REDUCE_MAX", id="uneven_3x5"),
    pytest.param(nn.AdaptiveMaxPool2d((2, 3)), (1, 4, 8, 9), "MAX_POOL2D", id="even_2x3"),
    pytest.param(nn.AdaptiveMaxPool2d(1), (1, 8, 5, 5), "MAX_POOL2D", id="global"),
]


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize("module, shape, op", ADAPTIVE)
def test_adaptive_max_pool_is_the_maximum_of_each_window(module, shape, op, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert op in case.ops()


def test_adaptive_max_pool_indices_are_named(tmp_path):
    from pipeline.errors import UnsupportedOperatorError

    module = nn.AdaptiveMaxPool2d((3, 5), return_indices=True)
    with pytest.raises(UnsupportedOperatorError, match="adaptive_max_pool2d"):
        run_case(module, [(1, 2, 7, 6)], tmp_path)
