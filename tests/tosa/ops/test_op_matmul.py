"""MATMUL (aten.matmul, bmm of two activations): reference model against torch."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Matmul(nn.Module):
    def forward(self, a, b):
        return a @ b


class Bmm(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


class Scores(nn.Module):
    """Attention scores: q @ k^T over [batch, heads, tokens, dim]."""

    def forward(self, q, k):
        return q @ k.transpose(-2, -1)


SHAPES = [
    pytest.param(Bmm(), [(2, 5, 8), ((2, 8, 3), 2.0)], id="bmm_rank3"),
    pytest.param(Matmul(), [(1, 4, 16, 8), (1, 4, 8, 16)], id="rank4_heads"),
    pytest.param(Scores(), [(1, 2, 6, 4), ((1, 2, 6, 4), 0.5)], id="scores_q_kT"),
]


@pytest.mark.parametrize("module, shapes", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_matmul_matches_torch(module, shapes, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    assert case.ops().count("MATMUL") == 1


BROADCAST = [
    pytest.param([(2, 3, 4), (1, 4, 5)], id="batch_1_against_2"),
    pytest.param([(2, 3, 5), (5, 2)], id="batched_by_activation_matrix"),
    pytest.param([(5,), (2, 5, 3)], id="vector_by_batch"),
    pytest.param([(3, 5), (2, 4, 5, 3)], id="matrix_by_rank4"),
    pytest.param([(4, 3, 5), (2, 4, 5, 3)], id="rank3_by_rank4"),
]


@pytest.mark.parametrize("shapes", BROADCAST)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_broadcast_batch_dims_tile_then_one_matmul(shapes, dtype, tmp_path):
    """torch.matmul broadcasts batch dims (a 1-D operand a row or a column): each operand
    is TILEd to the common batch, then one MATMUL over their product."""
    case, report = run_case(Matmul(), shapes, tmp_path, dtype)
    assert report["passed"]
    assert case.ops().count("MATMUL") == 1
    assert "TILE" in case.ops()


class MatrixVector(nn.Module):
    """``M @ v`` and ``v @ M`` with a 1-D activation (torch.matmul's vector forms)."""

    def __init__(self, vector_first: bool = False):
        super().__init__()
        self.vector_first = vector_first

    def forward(self, m, v):
        return v @ m if self.vector_first else m @ v


@pytest.mark.parametrize(
    "module, shapes",
    [
        pytest.param(MatrixVector(), [(4, 8), (8,)], id="matrix_vector"),
        pytest.param(MatrixVector(), [(2, 3, 8), (8,)], id="batched_matrix_vector"),
        pytest.param(MatrixVector(vector_first=True), [(8, 5), (8,)], id="vector_matrix"),
    ],
)
@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_vector_operand_matches_torch(module, shapes, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    assert case.ops().count("MATMUL") == 1
