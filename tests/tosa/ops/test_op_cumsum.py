"""cumsum -> a 1x1 CONV2D with lower-triangular 0/1 weights (innermost axis), a Kx1
depthwise CONV2D of ones (a short middle axis), or a log-step scan of int32 ADDs (integer
tensors, very long axes): the sums exact, one rounding into the output's quantization."""

import pytest
import torch

from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, booleans, integers, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

CASES = [
    pytest.param(lambda m, x: torch.cumsum(x, -1), (4, 3), "CONV2D", id="innermost_3"),
    pytest.param(lambda m, x: torch.cumsum(x, 1), (4, 257), "CONV2D", id="innermost_257"),
    pytest.param(lambda m, x: torch.cumsum(x, 1), (2, 16, 32), "DEPTHWISE_CONV2D", id="tokens"),
    pytest.param(lambda m, x: x.cumsum(1), (1, 8, 5, 6), "CONV2D", id="nchw_channels"),
    pytest.param(lambda m, x: x.cumsum(2), (1, 4, 6, 5), "DEPTHWISE_CONV2D", id="nchw_rows"),
    pytest.param(lambda m, x: x.cumsum(0), (800,), "CONV2D", id="rank1_800"),
    pytest.param(lambda m, x: x.cumsum(1), (2, 1100), "ADD", id="scan_beyond_1024"),
]  # fmt: skip


@pytest.mark.parametrize("fn, shape, op", CASES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_cumsum_matches_torch(fn, shape, op, dtype, tmp_path):
    case, report = run_case(Fn(fn), [shape], tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    if dtype == INT8:  # int8: the sum is exact, one RESCALE rounds it (int16: 16-bit scale)
        assert output["max_abs_diff_int"] <= 1
    assert op in case.ops()


def test_position_ids_from_an_int64_mask(tmp_path):
    """HF's ``(mask.cumsum(-1) - 1) * mask`` on an int64 input: int32 scan, exact."""
    fn = Fn(lambda m, mask: (torch.cumsum(mask, -1) - 1) * mask)
    case, report = run_case(fn, [booleans((2, 16), dtype=torch.int64)], tmp_path)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff"] == 0
    assert "CONV2D" not in case.ops() and "ADD" in case.ops()


def test_cumsum_of_ids_as_float(tmp_path):
    fn = Fn(lambda m, ids: ids.float().cumsum(-1))
    case, report = run_case(fn, [integers((1, 12), 5)], tmp_path)
    assert report["passed"]
