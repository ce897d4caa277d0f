"""AVG_POOL2D (avg_pool2d, adaptive_avg_pool2d): reference model against torch."""

import pytest
from torch import nn

from pipeline.errors import UnsupportedOperatorError
from tests.tosa.lowering_cases import A16W8, FP, run_case

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
    from pipeline.quant.program import load_program
    from pipeline.tosa.lowering import lower_program
    from pipeline.tosa.spec import parse_spec

    case, _ = run_case(nn.AdaptiveAvgPool2d(1), [(1, 4, 16, 16)], tmp_path)
    lowered = lower_program(load_program(case.path("quantized.pt2")), parse_spec("TOSA-1.0+INT"))
    pool = next(op for op in lowered.graph.operators if op.op == "AVG_POOL2D")
    assert pool.attrs["kernel"] == [16, 16] and pool.attrs["stride"] == [1, 1]


@pytest.mark.parametrize(
    "module, detail",
    [
        pytest.param(nn.AvgPool2d(3, 1, 1), "padding and count_include_pad=True", id="include_pad"),
        pytest.param(
            nn.AdaptiveAvgPool2d(3),
            "output \\(3, 3\\) not dividing input \\(8, 8\\)",
            id="adaptive_not_dividing",
        ),
    ],
)
def test_avg_pool2d_unsupported_configurations(module, detail, tmp_path):
    with pytest.raises(UnsupportedOperatorError, match=detail):
        run_case(module, [(1, 2, 8, 8)], tmp_path)
