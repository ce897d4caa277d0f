"""CONV2D: the TOSA reference model against torch's quantized graph, over shapes and types."""

import pytest
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def conv(cin, cout, kernel, stride=1, padding=0, bias=True):
    module = nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, bias=bias)
    nn.init.uniform_(module.weight, -0.5, 0.5)
    return module


SHAPES = [
    pytest.param(conv(3, 8, 3, padding=1), (1, 3, 8, 8), id="3x3_same"),
    pytest.param(conv(4, 6, 1, bias=False), (1, 4, 5, 7), id="1x1_nobias_rect"),
    pytest.param(conv(2, 4, 3, stride=2, padding=1), (1, 2, 9, 9), id="3x3_stride2_odd"),
    pytest.param(conv(3, 5, (3, 1), stride=(2, 1)), (2, 3, 8, 6), id="3x1_batch2"),
]


@pytest.mark.parametrize("module, shape", SHAPES)
def test_conv2d_int8_matches_torch(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert case.ops().count("CONV2D") == 1


@pytest.mark.parametrize("dtype", [A16W8, FP])
def test_conv2d_other_types_match_torch(dtype, tmp_path):
    case, report = run_case(conv(3, 8, 3, padding=1), [(1, 3, 8, 8)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops()[0] == "CONV2D"


def test_depthwise_is_reported_not_lowered_yet(tmp_path):
    from pipeline.errors import UnsupportedOperatorError

    depthwise = nn.Conv2d(4, 4, 3, groups=4)
    with pytest.raises(
        UnsupportedOperatorError, match=r"conv2d.default with groups=4 \(depthwise\)"
    ):
        run_case(depthwise, [(1, 4, 6, 6)], tmp_path)
