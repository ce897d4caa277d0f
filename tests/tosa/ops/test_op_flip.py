"""flip -> one REVERSE per run of flipped axes (of the tensor seen as [outer, run, inner]):
bit-exact against torch's quantized graph."""

import pytest
import torch

from pipeline.tosa.ops.op_flip import flipped_runs
from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

CASES = [
    pytest.param(lambda m, x: x.flip(0), (257,), 1, id="rank1_257"),
    pytest.param(lambda m, x: x.flip(1), (2, 6, 3), 1, id="rank3_middle"),
    pytest.param(lambda m, x: torch.flip(x, (-2, -1)), (1, 3, 5, 4), 1, id="nchw_h_and_w_as_one"),
    pytest.param(lambda m, x: x.flip(1), (1, 5, 3, 4), 1, id="nchw_channels"),
    pytest.param(lambda m, x: x.flip(0, 2), (3, 4, 2), 2, id="two_runs"),
    pytest.param(lambda m, x: x.flip(1, 3), (2, 3, 1, 4, 2), 1, id="rank5_size1_bridges"),
    pytest.param(lambda m, x: x.flip(1), (4, 1), 0, id="size1_is_nothing"),
]  # fmt: skip


@pytest.mark.parametrize("fn, shape, reverses", CASES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_flip_matches_torch_exactly(fn, shape, reverses, dtype, tmp_path):
    case, report = run_case(Fn(fn), [shape], tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert case.ops().count("REVERSE") == reverses


def test_runs_join_across_size1_axes():
    assert flipped_runs((2, 3, 1, 4), {1, 3}) == [(1, 4)]
    assert flipped_runs((2, 3, 5, 4), {1, 3}) == [(1, 2), (3, 4)]
    assert flipped_runs((2, 1, 4), {1}) == []
