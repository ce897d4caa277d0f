"""slice_scatter / select_scatter (``x[:, 2:5] = y``, ``x[:, ::2] = y``, ``x[:, 0] = v``, as
users write them in place) -> CONCATs of x's pieces and the values: bit-exact against
torch's quantized graph, both writes sharing x's quantization."""

import pytest
import torch

from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def put_rows(m, x, y):
    x = x.clone()
    x[:, 2:5] = y
    return x


def put_strided(m, x, y):
    x = x.clone()
    x[..., 1::2] = y
    return x


def put_first(m, x, v):
    x = x.clone()
    x[:, 0] = v
    return x


def put_last_channel(m, x, v):
    x = x.clone()
    x[:, -1] = v  # NCHW: the innermost TOSA axis
    return x


CASES = [
    pytest.param(put_rows, [(2, 8, 3), (2, 3, 3)], id="rows_in_place"),
    pytest.param(put_strided, [(3, 257), (3, 128)], id="strided_odd_257"),
    pytest.param(put_strided, [(1, 4, 6, 8), (1, 4, 6, 4)], id="strided_nchw_width"),
    pytest.param(lambda m, x, y: torch.slice_scatter(x, y, 0, 0, 800, 3), [(800,), (267,)],
                 id="functional_rank1_800_step3"),
    pytest.param(put_first, [(2, 5, 4), (2, 4)], id="select_first"),
    pytest.param(put_last_channel, [(1, 3, 4, 5), (1, 4, 5)], id="select_nchw_last_channel"),
    pytest.param(lambda m, x, v: torch.select_scatter(x, v, 2, 1), [(1, 2, 3, 2, 5), (1, 2, 2, 5)],
                 id="functional_select_rank5"),
]  # fmt: skip


@pytest.mark.parametrize("fn, shapes", CASES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_scatter_matches_torch_exactly(fn, shapes, dtype, tmp_path):
    case, report = run_case(Fn(fn), shapes, tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert "CONCAT" in case.ops()
    assert not {"SELECT", "SCATTER", "GATHER"} & set(case.ops())
