"""RESIZE (nearest upsampling by integer factors): exact against torch, over shapes/types."""

import pytest
from torch import nn

from pipeline.errors import UnsupportedOperatorError, UserError
from pipeline.ethosu.placement import check_npu_constraints
from pipeline.tosa.ops.op_upsample import axis_parameters, parameter_limits, resize_parameters
from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

SHAPES = [
    pytest.param(nn.Upsample(scale_factor=2), (1, 4, 5, 6), id="x2"),
    pytest.param(nn.Upsample(scale_factor=(2, 4)), (1, 3, 3, 3), id="x2_x4"),
    pytest.param(nn.Upsample(scale_factor=3), (1, 2, 3, 4), id="x3_odd"),
    pytest.param(nn.Upsample(size=(10, 6)), (1, 2, 5, 6), id="size_rows_only"),
]


@pytest.mark.parametrize("module, shape", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_upsample_nearest_matches_torch_exactly(module, shape, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0].get("max_abs_diff_int", 0) == 0
    assert case.ops() == ["RESIZE"]


def test_resize_parameters_pick_input_row_floor_y_over_k():
    assert resize_parameters(5, 10) == (4, 2, -1, 1)
    n, d, offset, _ = resize_parameters(3, 9)
    for y in range(9):  # TOSA NEAREST: round half up of (y * d + offset) / n
        assert (y * d + offset + n // 2) // n == y // 3


@pytest.mark.parametrize(
    "module, accelerator, ok",
    [
        pytest.param(nn.Upsample(scale_factor=4), "ethos-u55-128", True, id="u55_x4"),
        pytest.param(nn.Upsample(scale_factor=3), "ethos-u55-128", False, id="u55_x3"),
        pytest.param(nn.Upsample(scale_factor=(2, 1)), "ethos-u55-128", False, id="u55_x2_x1"),
        pytest.param(nn.Upsample(scale_factor=3), "ethos-u85-256", True, id="u85_x3"),
    ],
)
def test_u55_upscales_by_powers_of_two_only(module, accelerator, ok, tmp_path):
    case, _ = run_case(module, [(1, 2, 4, 4)], tmp_path)
    if ok:
        check_npu_constraints(case.tosa, accelerator)
    else:
        with pytest.raises(UserError, match="RESIZE on ethos-u55-128 must upscale both axes"):
            check_npu_constraints(case.tosa, accelerator)


OTHER_RATIOS = [
    pytest.param(nn.Upsample(scale_factor=1.5), (1, 2, 8, 3), id="x1_5"),
    pytest.param(nn.Upsample(size=(7, 7)), (1, 2, 5, 5), id="size_5_to_7"),
    pytest.param(nn.Upsample(scale_factor=0.5), (1, 2, 8, 6), id="half"),
    pytest.param(nn.Upsample(size=(3, 5)), (1, 2, 7, 9), id="down_7_to_3"),
    pytest.param(nn.Upsample(size=(74, 4)), (1, 1, 6, 4), id="float32_rows_below"),
]


@pytest.mark.parametrize("module, shape", OTHER_RATIOS)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_other_ratios_match_torch_exactly(module, shape, dtype, tmp_path):
    """torch picks row floor(y * r) (r = in / out, or 1 / scale_factor) in float32; the
    RESIZE picks the same rows (6 -> 74: torch's float32 ratio lands just below whole rows,
    which half a step less offset reproduces)."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0].get("max_abs_diff_int", 0) == 0
    assert case.ops() == ["RESIZE"]


@pytest.mark.parametrize("in_size, out_size", [(5, 7), (8, 12), (7, 3), (3, 7), (9, 2)])
def test_axis_parameters_pick_input_row_floor_y_times_ratio(in_size, out_size):
    n, d, offset, border = axis_parameters(in_size, out_size, nearest=True)
    assert parameter_limits(n, d, offset, border) is None
    for y in range(out_size):  # TOSA NEAREST: round half up of (y * d + offset) / n
        assert min((y * d + offset + n // 2) // n, in_size - 1) == y * in_size // out_size


def test_rows_torch_computes_unlike_any_resize_are_named(tmp_path):
    """2 -> 82 rows: torch's float32 ratio rounds some whole rows down and others not, which
    no RESIZE reproduces: the lowering names the operator instead of a wrong row."""
    with pytest.raises(UnsupportedOperatorError, match="float32 source rows"):
        run_case(nn.Upsample(size=(82, 4)), [(1, 1, 2, 4)], tmp_path)
