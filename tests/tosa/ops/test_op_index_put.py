"""index_put (``x[idx] = v``, ``x[:, idx] = 0``, ``x.index_copy(1, idx, v)``, ``x[mask] = v``)
-> SLICEs + CONCAT for constant indices in few runs, else SCATTER (on Ethos-U55/U65 its
variant's one-hot CONV2D for constant indices); a bool mask with broadcast values is a where
(SELECT). Bit-exact against torch's quantized graph."""

import pytest
import torch

from pipeline.errors import UnsupportedOperatorError
from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, booleans, integers, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def distinct(n: int, k: int):
    """An int64 index input: k distinct rows of n (TOSA SCATTER writes each row once)."""
    return lambda generator: torch.randperm(n, generator=generator)[:k]


def set_rows(m, x, v):
    x = x.clone()
    x[torch.tensor([0, 2])] = v
    return x


def set_every_other(m, x, v):
    x = x.clone()
    x[torch.arange(0, 36, 2)] = v  # 36 runs of one row: a SCATTER
    return x


def zero_columns(m, x):
    x = x.clone()
    x[:, torch.tensor([1, 3])] = 0.0
    return x


def set_channels(m, x, v):
    x = x.clone()
    x[:, torch.tensor([2, 0])] = v
    return x


def set_window(m, x, v):
    x = x.clone()
    x[:, torch.arange(4, 12)] = v  # one long run of rows: two SLICEs and a CONCAT
    return x


def set_repeated(m, x, v):
    x = x.clone()
    x[:, torch.tensor([1, 1, 3])] = v  # a repeated index: the last write wins
    return x


def set_apart(m, x, i, j, v):
    x = x.clone()
    x[i, :, j] = v  # index tensors apart: their dims come first in x[i, :, j]
    return x


def add_rows(m, x, i, v):
    y = x.clone()
    y.index_put_((i,), v, accumulate=True)  # in place, as models write it
    return y


def set_by_input(m, x, i, v):
    x = x.clone()
    x[i] = v
    return x


def set_mask(m, x, mask):
    x = x.clone()
    x[mask.bool()] = -1.0  # a mask from an int64 input: a where
    return x


def set_constant_mask(m, x, v):
    x = x.clone()
    x[:, torch.tensor([True, False, True, False])] = v  # values per masked row
    return x


CASES = [
    pytest.param(set_rows, [(4, 5), (2, 5)], "SCATTER", id="rows_in_place"),
    pytest.param(set_window, [(1, 16, 64), (1, 8, 64)], "CONCAT", id="arange_window"),
    pytest.param(set_every_other, [(36, 5), (18, 5)], "SCATTER", id="many_runs"),
    pytest.param(zero_columns, [(2, 6, 5)], "SCATTER", id="fill_zero"),
    pytest.param(set_channels, [(1, 4, 3, 5), (1, 2, 3, 5)], ("SCATTER", "CONCAT"),
                 id="nchw_channels"),
    pytest.param(lambda m, x, v: x.index_copy(1, torch.tensor([0, 3]), v),
                 [(2, 6, 3), (2, 2, 3)], "SCATTER", id="index_copy"),
    pytest.param(lambda m, x, v: x.index_copy(0, torch.tensor([3, 1]), v), [(257, 3), (2, 3)],
                 "SCATTER", id="index_copy_257_rows"),
    pytest.param(set_by_input, [(5, 3), distinct(5, 2), (2, 3)], "SCATTER", id="int64_input"),
    pytest.param(lambda m, x, i, j, v: x.index_put((i, j), v),
                 [(5, 9, 3), distinct(5, 2), distinct(9, 2), (2, 3)], "SCATTER",
                 id="two_index_inputs"),
    pytest.param(set_mask, [(2, 4), booleans((2, 4), dtype=torch.int64)], "SELECT",
                 id="mask_input_fill"),
    pytest.param(set_constant_mask, [(2, 4, 3), (2, 2, 3)], "SCATTER", id="constant_mask"),
    pytest.param(set_repeated, [(2, 800), (2, 3)], "SCATTER", id="repeated_index_800"),
    pytest.param(set_by_input, [(5, 3), lambda g: torch.tensor([1, 3, 1, 1, 0, 3]), (6, 3)],
                 "SCATTER", id="repeated_int64_input_last_wins"),
    pytest.param(lambda m, x, i, j, v: x.index_put((i, j), v),
                 [(1, 2, 3), lambda g: torch.tensor([0, 0]), lambda g: torch.tensor([1, 1]),
                  (2, 3)], "SCATTER", id="same_index_twice"),
    pytest.param(set_apart, [(4, 5, 6), distinct(4, 3), distinct(6, 3), (3, 5)], "SCATTER",
                 id="apart_indices"),
]  # fmt: skip


@pytest.mark.parametrize("fn, shapes, op", CASES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_index_put_matches_torch_exactly(fn, shapes, op, dtype, tmp_path):
    case, report = run_case(Fn(fn), shapes, tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert set(case.ops()) & ({op} if isinstance(op, str) else set(op))


ACCUMULATING = [
    pytest.param(lambda m, x, i, j, v: x.index_put((i, j), v, accumulate=True),
                 [(5, 9, 3), lambda g: torch.tensor([0, 3]), lambda g: torch.tensor([3, 1]),
                  (2, 3)], id="two_index_inputs"),
    pytest.param(add_rows, [(6, 4), lambda g: torch.tensor([1, 3, 1, -1]), (4, 4)],
                 id="repeated_and_negative_rows"),
    pytest.param(lambda m, x, i, v: x.int().index_put((i,), v.int(), accumulate=True),
                 [integers((6, 4), 50), lambda g: torch.tensor([1, 3, 1]), integers((3, 4), 9)],
                 id="int32_tensors"),
]  # fmt: skip


@pytest.mark.parametrize("fn, shapes", ACCUMULATING)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_accumulate_is_a_one_hot_product(fn, shapes, dtype, tmp_path):
    """Repeated rows add up, as torch's accumulate does; on every Ethos-U (no SCATTER)."""
    case, report = run_case(Fn(fn), shapes, tmp_path, dtype)
    assert report["passed"]
    assert "SCATTER" not in case.ops()
    assert {"MATMUL", "REDUCE_SUM"} & set(case.ops())


def test_accumulate_with_a_mask_is_named(tmp_path):
    fn = Fn(lambda m, x, mask, v: x.index_put((mask.bool(),), v, accumulate=True))
    with pytest.raises(UnsupportedOperatorError, match="accumulate=True"):
        run_case(fn, [(5, 3), booleans((5, 3), dtype=torch.int64), (1,)], tmp_path)


def set_rows_of_mask_input(m, x, mask, v):
    x = x.clone()
    x[mask.bool()] = v  # one (1, 3, 4) block for every masked row: a where
    return x


def set_two_constant_masks(m, x, v):
    x = x.clone()
    rows, cols = torch.tensor([False, True, True]), torch.tensor([True, False, True, False])
    x[rows, cols] = v  # torch pairs the k-th True of each: x[1, 0] and x[2, 2]
    return x


def set_constant_mask_and_ids(m, x, v):
    x = x.clone()
    x[torch.tensor([True, False, True]), torch.tensor([3, 1])] = v
    return x


MASKS = [
    pytest.param(set_rows_of_mask_input, [(2, 3, 4), booleans((2,), dtype=torch.int64),
                 (1, 3, 4)], "SELECT", id="mask_input_block_broadcast"),
    pytest.param(set_two_constant_masks, [(3, 4, 5), (2, 5)], "SCATTER", id="two_constant_masks"),
    pytest.param(set_constant_mask_and_ids, [(3, 4, 2), (2, 2)], "SCATTER",
                 id="constant_mask_and_int_index"),
]  # fmt: skip


@pytest.mark.parametrize("fn, shapes, op", MASKS)
@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_index_put_with_masks_matches_torch_exactly(fn, shapes, op, dtype, tmp_path):
    """Values that broadcast over a run-time mask: a where; constant masks, alone or beside
    integer indices: their True positions, paired as torch pairs them."""
    case, report = run_case(Fn(fn), shapes, tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert op in case.ops()


@pytest.mark.parametrize(
    "fn, shapes, detail",
    [
        pytest.param(lambda m, x, mask, v: x.index_put((mask.bool(),), v),
                     [(4, 3), lambda g: torch.tensor([1, 0, 1, 0]), (2, 3)],
                     "values per masked element .*data-dependent", id="values_per_element"),
        pytest.param(lambda m, x, a, b: x.index_put((a.bool(), b.bool()), torch.tensor(0.0)),
                     [(2, 3, 4), lambda g: torch.tensor([0, 1]), lambda g: torch.tensor([1, 0, 0])],
                     "beside other index tensors .*data-dependent", id="two_mask_inputs"),
    ],
)  # fmt: skip
def test_index_put_with_a_run_time_mask_and_values_per_element_is_named(fn, shapes, detail,
                                                                        tmp_path):
    with pytest.raises(UnsupportedOperatorError, match=detail):
        run_case(Fn(fn), shapes, tmp_path)
