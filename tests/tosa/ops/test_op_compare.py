"""eq / ne / gt / ge / lt / le -> EQUAL / GREATER / GREATER_EQUAL: bool outputs of the TOSA
reference model against torch's quantized graph, exactly."""

import pytest
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, integers, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Compare(nn.Module):
    """Every comparison of two tensors, and of a tensor with numbers (one a quantization
    tie of nothing in particular: 0.25 need not be a code)."""

    def forward(self, x, y):
        return x > y, x >= y, x < y, x <= y, x == y, x != y, x > 0.25, x <= -0.5, x == 0.0, x != 0.0


class PaddingMask(nn.Module):
    """What attention code builds from input_ids: pads, ranges, their combinations."""

    def forward(self, ids):
        keep = (ids != 0).logical_and(ids < 7)
        return ids == 0, ids > 2.5, keep, ~(ids >= 5), ids.unsqueeze(1) == ids.unsqueeze(2)


class ScoresAboveMean(nn.Module):
    """A comparison of computed values: both operands requantized to one shared scale."""

    def forward(self, x):
        return (x * 2.0) > x.mean(-1, keepdim=True)


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize(
    "shapes",
    [
        pytest.param([(2, 3, 8), (2, 3, 8)], id="same_shape"),
        pytest.param([(1, 4, 5, 6), ((1, 4, 1, 6), 0.5)], id="nhwc_broadcast"),
    ],
)
def test_comparisons_match_torch_exactly(shapes, dtype, tmp_path):
    """Codes of one shared quantization compare like the values; against a number the codes
    that pass are found with torch's own dequantize: bool outputs identical to torch's."""
    case, report = run_case(Compare(), shapes, tmp_path, dtype)
    assert report["passed"]
    assert all(o.get("max_abs_diff_int", o.get("max_abs_diff")) == 0 for o in report["outputs"])
    assert {"EQUAL", "GREATER", "GREATER_EQUAL", "LOGICAL_NOT"} <= set(case.ops())


@pytest.mark.parametrize("dtype", [INT8, FP])
def test_integer_ids_compare_without_quantization(dtype, tmp_path):
    """int64 ids are int32 in the graph: comparisons with numbers are exact integer bounds
    (``ids > 2.5`` is ``ids >= 3``); the graph needs no quantization at all."""
    case, report = run_case(PaddingMask(), [integers((2, 6), 10)], tmp_path, dtype)
    assert report["passed"]
    assert case.io()["inputs"][0]["dtype"] == "int32"
    assert all(o["dtype"] == "bool" for o in case.io()["outputs"])
    assert "RESCALE" not in case.ops()


@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_computed_operands_share_one_quantization(dtype, tmp_path):
    case, report = run_case(ScoresAboveMean(), [(2, 4, 8)], tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] == 0
    assert case.ops().count("GREATER") == 1


def test_intervals_become_one_or_two_comparisons():
    from pipeline.tosa.ops.op_compare import _checks, _int_interval

    assert _int_interval("gt", 2.5) == (3, None)
    assert _int_interval("le", -1.0) == (None, -1)
    assert _int_interval("eq", 0.5) == (1, 0)
    assert _checks(None, None) == [("GREATER_EQUAL", -(2**31), False)]
    assert _checks(1, 0) == [("GREATER", 2**31 - 1, False)]
    assert _checks(3, 3) == [("EQUAL", 3, False)]
    assert _checks(2, 5) == [("GREATER_EQUAL", 2, False), ("GREATER_EQUAL", 5, True)]
