"""RESIZE BILINEAR (+ RESCALE by 1 / (n_y * n_x)): bilinear resizing by integer factors and
other ratios, align_corners False and True, against torch's quantized graph in the TOSA
reference model; Vela
placement of the graph each NPU compiles (Ethos-U55/U65: the ``u55`` variant, in which
split_bilinear_resize writes factors 2/4/8 as NEAREST RESIZE + depthwise filter)."""

from fractions import Fraction
from pathlib import Path

import pytest
import torch.nn.functional as F
from torch import nn

from pipeline.errors import UnsupportedOperatorError, UserError
from pipeline.stages.lower import lower
from pipeline.verify.check import verify
from pipeline.tosa.flatbuffer import operator_names
from pipeline.ethosu.placement import check_npu_constraints
from pipeline.tosa.ops.op_upsample import axis_parameters, parameter_limits, resize_parameters
from tests.tosa.lowering_cases import A16W8, FP, INT8, SPECS, Case, run_case, run_vela

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
    pytest.param(bilinear(8), (1, 2, 3, 2), id="x8"),
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


@pytest.mark.parametrize("module, shape", SHAPES[:4])
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


OTHER_RATIOS = [
    pytest.param(nn.UpsamplingBilinear2d(scale_factor=2), (1, 4, 8, 3), id="align_corners_x2"),
    pytest.param(
        Interpolate(size=(16, 6), align_corners=True), (1, 4, 8, 3), id="align_corners_size"
    ),
    pytest.param(nn.UpsamplingBilinear2d(size=(2, 2)), (1, 4, 1, 1), id="align_corners_1x1"),
    pytest.param(
        Interpolate(size=(7, 5), align_corners=True), (1, 2, 5, 3), id="align_corners_7x5"
    ),
    pytest.param(nn.UpsamplingBilinear2d(scale_factor=0.5), (1, 4, 8, 6), id="align_corners_half"),
    pytest.param(Interpolate(scale_factor=0.5), (1, 4, 8, 6), id="half"),
    pytest.param(Interpolate(scale_factor=1.5), (1, 4, 8, 3), id="x1_5"),
    pytest.param(Interpolate(scale_factor=1.1), (1, 2, 4, 5), id="x1_1_same_size"),
    pytest.param(Interpolate(size=(7, 7)), (1, 2, 5, 5), id="size_5_to_7"),
]


@pytest.mark.parametrize("module, shape", OTHER_RATIOS)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_other_ratios_and_align_corners_match_torch(module, shape, dtype, tmp_path):
    """torch samples (y + 0.5) * r - 0.5 (r = in / out, or 1 / scale_factor when the model
    gave one) or, with align_corners, y * (in - 1) / (out - 1): the same one RESIZE (and
    RESCALE) with those ratios' parameters."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    if dtype != FP:  # rounding differences only, about as accurate as torch's q/dq (int16:
        # the int48 RESCALE has a 16-bit multiplier, 1 / (n_y * n_x) rounds to 2**-15)
        output = report["outputs"][0]
        assert output["max_abs_diff_int"] <= 1
        margin = 0.5 if dtype == INT8 else 3.0
        assert output["sqnr_db_vs_float"] >= output["sqnr_db_torch_quantized_vs_float"] - margin
    assert case.ops() == (["RESIZE"] if dtype == FP else ["RESIZE", "RESCALE"])


@pytest.mark.parametrize(
    "in_size, out_size, align_corners, scale",
    [(5, 7, False, None), (8, 4, False, None), (8, 12, False, 1.5), (3, 4, False, 1.5),
     (8, 16, True, None), (5, 7, True, None), (1, 4, True, None), (4, 1, True, None)],
)  # fmt: skip
def test_axis_parameters_give_torch_source_rows(in_size, out_size, align_corners, scale):
    """TOSA samples (y * d + offset) / n: exactly torch's source position, and the output
    size rule ((in - 1) * n - offset + border) / d + 1 == out holds."""
    n, d, offset, border = axis_parameters(
        in_size, out_size, nearest=False, align_corners=align_corners, scale=scale
    )
    assert parameter_limits(n, d, offset, border) is None

    def clamped(row):  # both flows read rows clamped to the image
        return min(max(row, 0), in_size - 1)

    for y in range(out_size):
        if align_corners:
            torch_row = Fraction(y * (in_size - 1), out_size - 1) if out_size > 1 else 0
        else:
            ratio = 1 / Fraction(scale) if scale else Fraction(in_size, out_size)
            torch_row = (y + Fraction(1, 2)) * ratio - Fraction(1, 2)
        assert clamped(Fraction(y * d + offset, n)) == clamped(torch_row)
    assert ((in_size - 1) * n - offset + border) == (out_size - 1) * d


def test_a_downscale_of_16_is_named_unsupported(tmp_path):
    """TOSA RESIZE downscales by less than 16 only: the lowering names the operator and the
    ratio rather than writing a graph the reference model rejects."""
    with pytest.raises(UnsupportedOperatorError, match="downscale of 16") as error:
        run_case(Interpolate(scale_factor=1 / 16), [(1, 2, 32, 32)], tmp_path)
    assert "upsample_bilinear2d" in str(error.value)
    assert "test_op_upsample_bilinear.py" in str(error.value)  # the model's line


def lower_u55_variant(case: Case, dtype: str) -> Path:
    """Lower ``case`` again with its Ethos-U55/U65 variant (``model.u55.tosa``), verify that
    against torch too, and return the variant's path."""
    variant = case.path("model.u55.tosa")
    program = case.path(case.path("program").read_text())
    lower(program, case.tosa, case.path("io.json"), spec=SPECS[dtype], variants={"u55": variant})
    report = verify(
        case.path("model.pt2"), program, case.tosa, case.path("io.json"),
        case.path("test_inputs.pt"), case.path("report.json"), variants={"u55": variant},
    )  # fmt: skip
    checked = report["variants"]["u55"]  # "same graph" when the pass changed nothing
    assert report["passed"]
    assert checked == "same graph" or checked["outputs"][0]["max_abs_diff_int"] <= 1
    return variant


FILTER_OPS = ["SLICE", "SLICE", "CONCAT"] * 2 + ["RESIZE", "SLICE", "DEPTHWISE_CONV2D", "RESCALE"]


@pytest.mark.needs_vela
@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize("module, shape", SHAPES[:4])
def test_bilinear_by_2_4_8_runs_on_the_npu_of_u55_and_u85(module, shape, dtype, tmp_path):
    """Each NPU compiles its own variant: the U85 the RESIZE BILINEAR, the U55 the NEAREST +
    depthwise filter form (which the pass tests show to give the same integers)."""
    case, _ = run_case(module, [shape], tmp_path / "case", dtype)
    u55 = lower_u55_variant(case, dtype)
    assert case.ops() == ["RESIZE", "RESCALE"]
    assert [op for op in operator_names(u55) if not op.startswith("CONST")] == FILTER_OPS
    for tosa, accelerator in ((case.tosa, "ethos-u85-256"), (u55, "ethos-u55-128")):
        check_npu_constraints(tosa, accelerator)
        figures = run_vela(tosa, accelerator, tmp_path / accelerator)
        assert figures["cpu_operators"] == 0
        assert figures["npu_op_share"] == 1.0


@pytest.mark.needs_vela
@pytest.mark.parametrize("module, shape", SHAPES[4:6])
def test_u85_runs_other_factors_on_the_npu(module, shape, tmp_path):
    case, _ = run_case(module, [shape], tmp_path / "case", INT8)
    figures = run_vela(case.tosa, "ethos-u85-256", tmp_path / "vela")
    assert figures["npu_op_share"] == 1.0


@pytest.mark.needs_vela
@pytest.mark.parametrize("module, shape", [OTHER_RATIOS[i] for i in (0, 5, 6)])
def test_u85_runs_other_ratios_on_the_npu_and_u55_rule_names_them(module, shape, tmp_path):
    case, _ = run_case(module, [shape], tmp_path / "case", INT8)
    figures = run_vela(case.tosa, "ethos-u85-256", tmp_path / "vela")
    assert figures["npu_op_share"] == 1.0
    u55 = lower_u55_variant(case, INT8)
    with pytest.raises(UserError, match="RESIZE on ethos-u55-128 must"):
        check_npu_constraints(u55, "ethos-u55-128")


def test_u55_rejects_other_factors_before_vela(tmp_path):
    """Vela 5.2 runs NEAREST only by 2/4/8 and no TOSA form of BILINEAR RESIZE on U55/U65,
    so the U55 variant keeps a bilinear x3: name the model line instead of Vela's
    'Non-passthrough operation (Resize)'."""
    case, _ = run_case(bilinear(3), [(1, 2, 4, 4)], tmp_path)
    u55 = lower_u55_variant(case, INT8)
    with pytest.raises(
        UserError, match="RESIZE on ethos-u55-128 must upscale both axes by a power of two"
    ):
        check_npu_constraints(u55, "ethos-u55-128")
