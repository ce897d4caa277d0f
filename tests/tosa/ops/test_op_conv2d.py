"""CONV2D: the TOSA reference model against torch's quantized graph, over shapes and types."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, lower_case, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def conv(cin, cout, kernel, stride=1, padding=0, bias=True, groups=1):
    module = nn.Conv2d(cin, cout, kernel, stride, padding, groups=groups, bias=bias)
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


def depthwise(channels, multiplier, kernel, stride=1, padding=0, bias=True):
    module = nn.Conv2d(
        channels, channels * multiplier, kernel, stride, padding, groups=channels, bias=bias
    )
    nn.init.uniform_(module.weight, -0.5, 0.5)
    return module


DEPTHWISE = [
    pytest.param(depthwise(8, 1, 3, padding=1), (1, 8, 7, 7), id="3x3_same"),
    pytest.param(depthwise(4, 1, 3, stride=2, padding=1), (1, 4, 9, 8), id="3x3_stride2_odd"),
    pytest.param(depthwise(3, 2, (3, 1), bias=False), (1, 3, 6, 5), id="multiplier2_3x1"),
    pytest.param(depthwise(2, 1, 5, stride=3, padding=2), (1, 2, 10, 10), id="5x5_stride3"),
]


@pytest.mark.parametrize("module, shape", DEPTHWISE)
def test_depthwise_int8_matches_torch(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert case.ops() == ["DEPTHWISE_CONV2D", "RESCALE"]


@pytest.mark.parametrize("dtype", [A16W8, FP])
def test_depthwise_other_types_match_torch(dtype, tmp_path):
    case, report = run_case(depthwise(4, 2, 3, padding=1), [(1, 4, 6, 6)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops()[0] == "DEPTHWISE_CONV2D"


class PaddedConv(nn.Module):
    """TF-style "same" padding: an explicit asymmetric zero pad, then an unpadded conv."""

    def __init__(self, pads, groups=1):
        super().__init__()
        self.pads = pads
        self.conv = nn.Conv2d(4, 4, (4, 3), stride=2, groups=groups)

    def forward(self, x):
        return self.conv(nn.functional.pad(x, self.pads))


@pytest.mark.parametrize(
    "pads, groups",
    [
        pytest.param((1, 1, 4, 5), 1, id="tf_same_rows_4_5"),
        pytest.param((0, 1, 0, 1), 4, id="depthwise_bottom_right"),
    ],
)
def test_asymmetric_explicit_padding_folds_into_the_conv(pads, groups, tmp_path):
    case, report = run_case(PaddedConv(pads, groups), [(1, 4, 11, 8)], tmp_path)
    assert report["passed"]
    assert "PAD" not in case.ops()


@pytest.mark.parametrize(
    "dtype, module, shape",
    [
        pytest.param(INT8, conv(4, 6, 3, padding=1, groups=2), (1, 4, 6, 6), id="int8_2_groups"),
        pytest.param(INT8, conv(6, 3, 1, stride=2, groups=3), (1, 6, 7, 7), id="int8_3_groups_1x1"),
        pytest.param(A16W8, conv(4, 4, 3, groups=2), (1, 4, 5, 5), id="a16w8_2_groups"),
        pytest.param(FP, conv(4, 4, 3, groups=2), (1, 4, 5, 5), id="fp32_2_groups"),
    ],
)
def test_grouped_conv_is_one_conv_per_group(dtype, module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    groups = module.groups
    assert case.ops().count("CONV2D") == groups and case.ops().count("SLICE") == groups
    assert case.ops()[-1] == "CONCAT"


def dilated(cin, cout, kernel, padding, dilation, groups=1, stride=1):
    torch.manual_seed(0)
    module = nn.Conv2d(cin, cout, kernel, stride, padding, dilation, groups)
    nn.init.uniform_(module.weight, -0.5, 0.5)
    return module


DILATED = [
    pytest.param(dilated(4, 8, 3, 2, 2), (1, 4, 12, 12), id="atrous_3x3_d2"),
    pytest.param(dilated(4, 8, 3, 1, (2, 1), stride=2), (1, 4, 11, 9), id="d2x1_s2"),
    pytest.param(dilated(8, 8, 3, 3, 3, groups=8), (1, 8, 10, 10), id="depthwise_d3"),
    pytest.param(dilated(4, 8, (4, 3), "same", (1, 3)), (1, 4, 9, 10), id="same_even_kernel"),
    pytest.param(dilated(4, 8, 3, "valid", 1), (1, 4, 9, 10), id="valid"),
    # Dilations reaching past the map: the taps that only read padding are dropped
    # (conv.drop_padding_taps); test_padding_taps_are_dropped checks the kernels left.
    pytest.param(dilated(4, 8, 3, 9, 9), (1, 4, 8, 12), id="past_the_rows_d9"),
    pytest.param(dilated(4, 8, 3, 12, 12, stride=2), (1, 4, 8, 8), id="past_the_map_s2"),
    pytest.param(dilated(8, 8, 5, 8, 4, groups=8), (1, 8, 8, 8), id="depthwise_5x5_d4"),
]
# Kernel (rows, columns) left of each case above that drops taps.
KEPT_TAPS = {"past_the_rows_d9": (1, 3), "past_the_map_s2": (1, 1), "depthwise_5x5_d4": (3, 3)}


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize("module, shape", DILATED)
def test_dilated_and_string_padded_conv2d_match_torch(module, shape, dtype, tmp_path):
    """TOSA's own dilation; padding="same" pads d * (k - 1), the odd one after (torch's rule)."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    ops = [op for op in case.ops() if op != "SLICE"]  # past_the_map_s2 crops a row no output reads
    assert ops[0] in ("CONV2D", "DEPTHWISE_CONV2D") and "PAD" not in ops


@pytest.mark.parametrize("module, shape", [p for p in DILATED if p.id in KEPT_TAPS],
                         ids=sorted(KEPT_TAPS, key=[p.id for p in DILATED].index))
def test_padding_taps_are_dropped(module, shape, tmp_path):
    """A dilated kernel's rows and columns that read only padding are not in the graph."""
    from pipeline.tosa.flatbuffer import read_block

    case = lower_case(module, [shape], tmp_path)
    block = read_block(case.tosa)
    (conv,) = [op for op in block.resolved() if op.op in ("CONV2D", "DEPTHWISE_CONV2D")]
    weights = conv.inputs[1].shape  # OHWI (CONV2D) or HWCM (DEPTHWISE_CONV2D)
    kept = tuple(weights[1:3]) if conv.op == "CONV2D" else tuple(weights[:2])
    expected = KEPT_TAPS[next(p.id for p in DILATED if p.values[0] is module)]
    assert kept == expected
    if expected == (1, 1):
        assert conv.attrs["dilation"] == [1, 1]
