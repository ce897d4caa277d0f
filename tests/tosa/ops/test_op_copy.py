"""aten.copy (``x[:, 1] = v`` with v broadcast, after functionalisation ``copy(x[:, 1], v)``
then a scatter) -> the values TILEd to the destination's shape: exact."""

import pytest

from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def fill_column(m, x, v):
    x = x.clone()
    x[:, 1] = v  # v [3] broadcast over the batch
    return x


def fill_window(m, x, v):
    x = x.clone()
    x[:, :, 2:4] = v  # v [1, 1, 1] broadcast over a window of H
    return x


@pytest.mark.parametrize(
    "fn, shapes",
    [pytest.param(fill_column, [(4, 5, 3), (3,)], id="broadcast_row"),
     pytest.param(fill_window, [(1, 3, 6, 4), (1, 1, 1)], id="broadcast_scalar_nchw")],
)  # fmt: skip
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_broadcast_write_matches_torch_exactly(fn, shapes, dtype, tmp_path):
    case, report = run_case(Fn(fn), shapes, tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert "TILE" in case.ops() and "CONCAT" in case.ops()
