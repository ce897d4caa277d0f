"""embedding / index_select / index.Tensor -> GATHER (or SLICE for consecutive constant
indices): the TOSA reference model against torch's quantized graph, bit-exact (a lookup
moves the table's integers)."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, booleans, integers, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

VOCAB, POSITIONS, DIM = 50, 16, 16


class TokenAndPosition(nn.Module):
    """A transformer's input: token embedding (padding_idx 0) + learned position embedding
    of ``arange(seq)`` (a constant after normalisation)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.tokens = nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.positions = nn.Embedding(POSITIONS, DIM)

    def forward(self, ids):
        return self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))


class Lookups(nn.Module):
    """Rows of an activation picked by run-time indices (one index tensor, any dim)."""

    def forward(self, x, index):
        return x[:, index] * 2.0, torch.index_select(x, 2, index), x[index]


class ConstantRows(nn.Module):
    """Constant indices: consecutive ones are a SLICE, the others a GATHER of constants (or
    SLICEs and a CONCAT of their runs, where Vela's estimates say that is cheaper)."""

    def forward(self, x):
        return x[:, torch.arange(2, 6)], x[:, torch.tensor([5, 0, -1])]


class PaddingMaskRows(nn.Module):
    """How HF builds the padding mask: ``mask[batch_idx, kv_idx]`` with two constant index
    tensors into the bool attention mask (no GATHER once folded)."""

    def forward(self, mask):
        rows = mask.bool()[torch.arange(1)[:, None, None, None], torch.arange(8)[None, None, None]]
        return rows & torch.ones(1, 1, 8, 8, dtype=torch.bool)


@pytest.mark.parametrize(
    "dtype, ids",
    [(INT8, torch.int64), (A16W8, torch.int64), (FP, torch.int64), (INT8, torch.int32)],
)
def test_token_and_position_embedding(dtype, ids, tmp_path):
    """int64 (or int32) ids are an int32 graph input; the table is one int8 (int16 for a16w8)
    tensor whose integers the rows keep."""
    inputs = [integers((2, 12), VOCAB, ids)]
    case, report = run_case(TokenAndPosition(), inputs, tmp_path, dtype)
    assert report["passed"]
    assert case.io()["inputs"][0]["dtype"] == "int32"
    assert case.ops().count("GATHER") == 1
    if dtype != FP:
        assert report["outputs"][0]["max_abs_diff_int"] <= 1  # the ADD rounds once


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_lookups_of_activations_are_exact(dtype, tmp_path):
    index = lambda g: torch.tensor([3, 0, 3, 1])  # noqa: E731 - repeated and unordered rows
    case, report = run_case(Lookups(), [(4, 6, 5), index], tmp_path, dtype)
    assert report["passed"]
    assert all(o.get("max_abs_diff_int", o.get("max_abs_diff")) == 0 for o in report["outputs"][1:])
    assert case.ops().count("GATHER") == 3


@pytest.mark.parametrize("dtype", [INT8, FP])
def test_constant_indices(dtype, tmp_path):
    case, report = run_case(ConstantRows(), [(2, 8, 5)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops().count("GATHER") + case.ops().count("CONCAT") == 1
    assert "SLICE" in case.ops()


def test_hf_padding_mask_rows_need_no_gather(tmp_path):
    case, report = run_case(PaddingMaskRows(), [booleans((1, 8), dtype=torch.int64)], tmp_path)
    assert report["passed"]
    assert "GATHER" not in case.ops()  # every row, in order: the mask itself


# index.Tensor / index_select as users write them: bool masks, several index tensors, rolls.
INDEXING = [
    pytest.param(lambda m, x: x[:, torch.tensor([True, False, True, True])], [(2, 4, 5)],
                 id="constant_bool_mask"),
    pytest.param(lambda m, x: x[torch.tensor([[True, False], [False, True], [True, True]])],
                 [(3, 2, 4)], id="constant_bool_mask_2d"),
    pytest.param(lambda m, x, i, j: x[i, j], [(5, 9, 3), integers((4,), 5), integers((4,), 9)],
                 id="two_index_inputs"),
    pytest.param(lambda m, x, i, j: x[:, :, i, j],
                 [(1, 3, 5, 9), integers((4,), 5), integers((4,), 9)], id="two_inputs_nchw"),
    pytest.param(lambda m, x, a, b, c: x[a, b, c],
                 [(15, 3, 7), integers((15,), 15), integers((3, 1), 3), integers((6, 1, 1), 7)],
                 id="three_inputs_broadcast_to_rank3"),
    pytest.param(lambda m, x, a, b: x[a, :, b],
                 [(4, 5, 6), integers((3,), 4), integers((3,), 6)], id="apart_indices_first"),
    pytest.param(lambda m, x, a, b: x[:, a, :, b],
                 [(2, 4, 5, 6), integers((2, 1), 4), integers((3,), 6)], id="apart_broadcast"),
    pytest.param(lambda m, x: x[:, torch.arange(0, 257, 2)], [(1, 257, 8)], id="arange_step_257"),
    pytest.param(lambda m, x: torch.roll(x, 100, 1), [(1, 257, 64)], id="roll_257"),
    pytest.param(lambda m, x: torch.roll(x, (1, -1), (0, 2)), [(2, 6, 3)], id="roll_two_dims"),
    pytest.param(lambda m, x: torch.roll(x, 3, -1), [(4, 800)], id="roll_800"),
    pytest.param(lambda m, x, i: x.index_select(0, i), [(3,), integers((5,), 3)],
                 id="rank1_3_int64_input"),
]  # fmt: skip


@pytest.mark.parametrize("fn, shapes", INDEXING)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_indexing_is_exact(fn, shapes, dtype, tmp_path):
    _, report = run_case(Fn(fn), shapes, tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
