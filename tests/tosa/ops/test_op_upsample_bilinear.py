"""RESIZE BILINEAR (+ RESCALE by 1 / (n_y * n_x)): bilinear upsampling by integer factors,
align_corners=False, against torch's quantized graph in the TOSA reference model."""

from fractions import Fraction

import pytest
import torch.nn.functional as F
from torch import nn

from pipeline.errors import UnsupportedOperatorError, UserError
from pipeline.tosa.npu_constraints import check_npu_constraints
from pipeline.tosa.ops.op_upsample import resize_parameters
from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case, run_vela

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Interpolate(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x):
        return F.interpolate(x, mode="bilinear", **self.kwargs)


def bilinear(scale_factor):
    return nn.Upsample(scale_factor=scale_factor, mode="bilinear", align_corners=False)


SHAPES = [
    pytest.param(bilinear(2), (1, 4, 5, 6), id="x2"),
    pytest.param(bilinear(4), (1, 3, 4, 7), id="x4_non_square"),
    pytest.param(bilinear((2, 4)), (1, 3, 3, 5), id="x2_x4"),
    pytest.param(bilinear(3), (1, 2, 3, 4), id="x3_odd"),
    pytest.param(Interpolate(size=(10, 6)), (1, 2, 5, 6), id="size_rows_only"),
    pytest.param(Interpolate(scale_factor=2.0), (1, 8, 1, 1), id="x2_from_1x1"),
]


@pytest.mark.parametrize("module, shape", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_upsample_bilinear_matches_torch_within_rounding(module, shape, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    output = report["outputs"][0]
    assert report["passed"]
    assert output["tolerance"] == 1 and output["max_abs_diff_int"] <= 1
    assert output["exact_match_fraction"] >= 0.8
    assert case.ops() == ["RESIZE", "RESCALE"]


@pytest.mark.parametrize("module, shape", SHAPES[:3])
def test_upsample_bilinear_float(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path, FP)
    assert report["passed"]
    assert case.ops() == ["RESIZE"]


def test_nonzero_zero_point_input(tmp_path):
    """After conv + ReLU the input zero point is far from 0: RESIZE weights it with the
    values, so the RESCALE must not subtract it again."""
    module = nn.Sequential(nn.Conv2d(3, 4, 1), nn.ReLU(), bilinear(2))
    case, report = run_case(module, [(1, 3, 4, 5)], tmp_path, INT8)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] <= 1
    assert case.ops()[-2:] == ["RESIZE", "RESCALE"]


@pytest.mark.parametrize("factor", [2, 3, 4, 8])
def test_resize_parameters_give_torch_half_pixel_source_rows(factor):
    """TOSA samples (y * d + offset) / n; torch (align_corners=False) (y + 0.5) / k - 0.5."""
    in_size = 5
    n, d, offset, border = resize_parameters(in_size, in_size * factor)
    for y in range(in_size * factor):
        assert Fraction(y * d + offset, n) == Fraction(2 * y + 1, 2 * factor) - Fraction(1, 2)
    # TOSA's output size rule holds: ((in - 1) * n - offset + border) / d + 1 == out
    assert ((in_size - 1) * n - offset + border) % d == 0
    assert ((in_size - 1) * n - offset + border) // d + 1 == in_size * factor


@pytest.mark.parametrize(
    "module",
    [
        pytest.param(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True), id="module"),
        pytest.param(Interpolate(scale_factor=2.0, align_corners=True), id="functional"),
    ],
)
def test_align_corners_true_is_unsupported(module, tmp_path):
    with pytest.raises(UnsupportedOperatorError, match="align_corners=True") as error:
        run_case(module, [(1, 2, 4, 4)], tmp_path)
    assert "upsample_bilinear2d" in str(error.value)
    assert "(align_corners=False)" in str(error.value)
    if isinstance(module, Interpolate):  # user code: the error names the model's line
        assert "test_op_upsample_bilinear.py" in str(error.value)


def test_fractional_factor_is_unsupported(tmp_path):
    with pytest.raises(UnsupportedOperatorError, match="integer scale factors"):
        run_case(Interpolate(size=(7, 7)), [(1, 2, 5, 5)], tmp_path)


@pytest.mark.needs_vela
@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize("module, shape", SHAPES[:3])
def test_u85_runs_bilinear_on_the_npu(module, shape, dtype, tmp_path):
    case, _ = run_case(module, [shape], tmp_path / "case", dtype)
    check_npu_constraints(case.tosa, "ethos-u85-256")
    figures = run_vela(case.tosa, "ethos-u85-256", tmp_path / "vela")
    assert figures["cpu_operators"] == 0
    assert figures["npu_op_share"] == 1.0


def test_u55_rejects_bilinear_before_vela(tmp_path):
    """Vela 5.2 does not compile any TOSA form of BILINEAR RESIZE for U55/U65: name the
    model line instead of Vela's 'Non-passthrough operation (Resize)'."""
    case, _ = run_case(bilinear(2), [(1, 2, 4, 4)], tmp_path)
    with pytest.raises(UserError, match="RESIZE on ethos-u55-128 must use NEAREST mode"):
        check_npu_constraints(case.tosa, "ethos-u55-128")
