"""RESIZE (nearest upsampling by integer factors): exact against torch, over shapes/types."""

import pytest
from torch import nn

from pipeline.errors import UnsupportedOperatorError, UserError
from pipeline.tosa.npu_constraints import check_npu_constraints
from pipeline.tosa.ops.op_upsample import resize_parameters
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


def test_fractional_factor_is_unsupported(tmp_path):
    with pytest.raises(UnsupportedOperatorError, match="integer scale factors"):
        run_case(nn.Upsample(size=(7, 7)), [(1, 2, 5, 5)], tmp_path)
