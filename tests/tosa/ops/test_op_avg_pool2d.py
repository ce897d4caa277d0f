"""AVG_POOL2D (avg_pool2d, adaptive_avg_pool2d): reference model against torch."""

import pytest
from torch import nn

from pipeline.errors import UnsupportedOperatorError
from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

SHAPES = [
    pytest.param(nn.AvgPool2d(2), (1, 4, 8, 8), id="2x2_s2"),
    pytest.param(nn.AdaptiveAvgPool2d(1), (1, 8, 6, 6), id="global_6x6"),
    pytest.param(nn.AdaptiveAvgPool2d((2, 2)), (1, 3, 8, 4), id="adaptive_2x2"),
    pytest.param(
        nn.AvgPool2d(3, 1, 1, count_include_pad=False), (1, 2, 5, 5), id="3x3_pad1_exclude_pad"
    ),
]


@pytest.mark.parametrize("module, shape", SHAPES)
def test_avg_pool2d_int8_matches_torch(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert case.ops() == ["AVG_POOL2D"]


@pytest.mark.parametrize("dtype", [A16W8, FP])
def test_avg_pool2d_other_types_match_torch(dtype, tmp_path):
    case, report = run_case(nn.AdaptiveAvgPool2d(1), [(1, 8, 4, 4)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == ["AVG_POOL2D"]


def test_global_pool_uses_stride_1_for_ethos_u55(tmp_path):
    """U55 pools only with stride 1..3; a kernel covering the input gets stride 1."""
    from pipeline.programs import load_program
    from pipeline.tosa.lowering import lower_program
    from pipeline.tosa.spec import parse_spec

    case, _ = run_case(nn.AdaptiveAvgPool2d(1), [(1, 4, 16, 16)], tmp_path)
    lowered = lower_program(load_program(case.path("quantized.pt2")), parse_spec("TOSA-1.0+INT"))
    pool = next(op for op in lowered.graph.operators if op.op == "AVG_POOL2D")
    assert pool.attrs["kernel"] == [16, 16] and pool.attrs["stride"] == [1, 1]


@pytest.mark.parametrize(
    "module, shape",
    [
        pytest.param(nn.AvgPool2d(3, 1, 1), (1, 4, 6, 6), id="3x3_pad1"),
        pytest.param(nn.AvgPool2d(3, 2, 1), (1, 2, 9, 8), id="3x3_stride2_pad1_odd"),
    ],
)
def test_padding_counted_in_the_average_pads_explicitly(module, shape, tmp_path):
    """count_include_pad=True divides by the whole kernel: PAD with a real 0.0, pool unpadded
    (Vela keeps an AVG_POOL2D with top/left padding on the CPU)."""
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert case.ops() == ["PAD", "AVG_POOL2D"]


NOT_DIVIDING = [
    pytest.param(10, (1, 3, 7, 7), INT8, id="7x7_to_10x10_upscale"),
    pytest.param(10, (1, 3, 7, 7), A16W8, id="7x7_to_10x10_upscale_a16w8"),
    pytest.param(10, (1, 3, 7, 7), FP, id="7x7_to_10x10_upscale_fp"),
    pytest.param(3, (1, 4, 8, 8), INT8, id="8x8_to_3x3"),
    pytest.param((2, 3), (2, 2, 5, 7), A16W8, id="batch2_5x7_to_2x3"),
    pytest.param((1, 3), (1, 2, 6, 5), INT8, id="rows_divide_cols_not"),
    pytest.param((9, 4), (1, 2, 6, 6), INT8, id="rows_up_cols_down"),
]


@pytest.mark.parametrize("out_size, shape, dtype", NOT_DIVIDING)
def test_adaptive_not_dividing_is_one_window_matrix(out_size, shape, dtype, tmp_path):
    """Windows of several sizes, overlapping when upscaling: summed by one 0/1 CONV2D and
    divided by their own sizes in one RESCALE."""
    case, report = run_case(nn.AdaptiveAvgPool2d(out_size), [shape], tmp_path, dtype)
    assert report["passed"]
    assert case.ops().count("CONV2D") == 1
    assert "AVG_POOL2D" not in case.ops()
    assert case.ops().count("RESCALE") == (0 if dtype == FP else 1)


def test_adaptive_past_the_matrix_bound_pools_each_window(tmp_path):
    """224x224 -> 3x7: a window matrix of 1.05M weights; a pool per cell instead."""
    case, report = run_case(nn.AdaptiveAvgPool2d((3, 7)), [(1, 1, 224, 224)], tmp_path)
    assert report["passed"]
    assert case.ops().count("AVG_POOL2D") == 21
    assert "CONV2D" not in case.ops()


@pytest.mark.slow
@pytest.mark.needs_vela
@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_adaptive_upscale_runs_on_the_npu(dtype, tmp_path):
    """The reference's 7x7 -> 10x10 compiles wholly for U55 and U85."""
    from tests.tosa.lowering_cases import run_vela

    case, report = run_case(nn.AdaptiveAvgPool2d(10), [(1, 3, 7, 7)], tmp_path, dtype)
    assert report["passed"]
    for variant, accelerator in (("u55", "ethos-u55-128"), ("u85", "ethos-u85-256")):
        figures = run_vela(case.variant(variant), accelerator, tmp_path / variant)
        assert figures["npu_op_share"] == 1.0


def test_adaptive_windows_match_torch():
    from pipeline.fx import adaptive_windows

    assert adaptive_windows(8, 3) == [(0, 3), (2, 6), (5, 8)]
    assert adaptive_windows(6, 2) == [(0, 3), (3, 6)]


@pytest.mark.parametrize(
    "module, detail",
    [
        pytest.param(
            nn.AdaptiveAvgPool2d(9),
            "output \\(9, 9\\) not dividing input \\(120, 120\\)",
            id="adaptive_too_many_cells",
        ),
    ],
)
def test_avg_pool2d_unsupported_configurations(module, detail, tmp_path):
    with pytest.raises(UnsupportedOperatorError, match=detail):
        run_case(module, [(1, 1, 120, 120)], tmp_path)


@pytest.mark.parametrize("module, shape", SHAPES)
def test_avg_pool2d_fp32_matches_torch(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path, FP)
    assert report["passed"]
    assert case.ops() == ["AVG_POOL2D"]


CEIL = [
    pytest.param(nn.AvgPool2d(3, 2, ceil_mode=True), (1, 4, 8, 8), ["AVG_POOL2D"], id="3x3_s2"),
    pytest.param(nn.AvgPool2d(2, 2, ceil_mode=True), (1, 4, 7, 9), ["AVG_POOL2D"], id="2x2_odd"),
    pytest.param(nn.AvgPool2d(3, 2, 1, ceil_mode=True), (1, 4, 10, 7), ["PAD", "AVG_POOL2D"],
                 id="pad1_include_pad"),
    pytest.param(nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), (1, 4, 10, 7),
                 ["AVG_POOL2D"], id="pad1_exclude_pad"),
    pytest.param(nn.AvgPool2d(3, 3, 1, ceil_mode=True), (1, 4, 7, 8),
                 ["PAD", "SLICE", "AVG_POOL2D"], id="drops_a_window_starting_in_the_padding"),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize("module, shape, ops", CEIL)
def test_avg_pool2d_ceil_mode_matches_torch(module, shape, ops, dtype, tmp_path):
    """The part of the last window past the (explicit) padding is TOSA padding, which TOSA
    leaves out of the divisor like torch does; the padding torch counts is a PAD of 0.0."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == ops


class OverriddenPool(nn.Module):
    def __init__(self, divisor, **kwargs):
        super().__init__()
        self.divisor, self.kwargs = divisor, kwargs

    def forward(self, x):
        return nn.functional.avg_pool2d(x, divisor_override=self.divisor, **self.kwargs)


@pytest.mark.parametrize(
    "module",
    [
        pytest.param(OverriddenPool(2, kernel_size=2), id="sum_over_2"),
        pytest.param(OverriddenPool(16, kernel_size=3, stride=1, padding=1), id="padded_16"),
    ],
)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_divisor_override_is_the_average_scaled(module, dtype, tmp_path):
    """Every window holds kh * kw values: sum / d is the average times kh * kw / d, which
    folds into the pool's output RESCALE (one MUL in float graphs)."""
    case, report = run_case(module, [(1, 3, 8, 8)], tmp_path, dtype)
    assert report["passed"]
    assert "AVG_POOL2D" in case.ops()


@pytest.mark.parametrize(
    "module, shape",
    [
        pytest.param(OverriddenPool(3, kernel_size=2, ceil_mode=True), (1, 3, 7, 7),
                     id="ceil_mode"),
        pytest.param(nn.AvgPool2d(3, 1, 1, ceil_mode=True, count_include_pad=False,
                                  divisor_override=4), (1, 2, 10, 10), id="uncounted_pad"),
        pytest.param(OverriddenPool(5, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0),
                                    ceil_mode=True), (2, 4, 9, 6), id="rect_strided_ceil"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_divisor_override_of_uneven_windows_is_a_sum(module, shape, dtype, tmp_path):
    """ceil_mode windows and uncounted padding hold fewer values, yet torch divides each
    window's sum by d: a depthwise convolution with ones over the zero-padded input."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert "DEPTHWISE_CONV2D" in case.ops() or "CONV2D" in case.ops()
