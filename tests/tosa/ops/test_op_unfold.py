"""Tensor.unfold (sliding windows) -> the windows' elements taken along the dim (SLICEs +
CONCAT for long windows, a one-hot CONV2D along the innermost axis, else GATHER), a RESHAPE
and the layout's TRANSPOSE: bit-exact against torch's quantized graph."""

import pytest

from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

CASES = [
    pytest.param(lambda m, x: x.unfold(1, 3, 2), (2, 9, 4), "SLICE", id="tokens_overlapping"),
    pytest.param(lambda m, x: x.unfold(-1, 4, 2), (2, 3, 16), "SLICE", id="last_dim"),
    pytest.param(lambda m, x: x.unfold(1, 4, 4), (1, 16, 8), "RESHAPE", id="patches_disjoint"),
    pytest.param(lambda m, x: x.unfold(-1, 64, 32), (1, 800), "SLICE", id="audio_frames_800"),
    pytest.param(lambda m, x: x.unfold(2, 3, 1), (1, 4, 6, 5), "SLICE", id="nchw_rows"),
    pytest.param(lambda m, x: x.unfold(0, 2, 1), (3,), "CONV2D", id="rank1_3"),
]  # fmt: skip


@pytest.mark.parametrize("fn, shape, op", CASES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_unfold_matches_torch_exactly(fn, shape, op, dtype, tmp_path):
    case, report = run_case(Fn(fn), [shape], tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert op in case.ops()
