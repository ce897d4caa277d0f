"""mm / addmm / ``x @ W``: with a constant W a 1x1 CONV2D (like linear), with two activations
a MATMUL; the TOSA reference model against torch, over shapes and types."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Weighted(nn.Module):
    """``product(x, W, b)`` with a parameter W [in, out] (a linear weight transposed)."""

    def __init__(self, product, in_features, out_features):
        super().__init__()
        torch.manual_seed(0)
        self.product = product
        self.weight = nn.Parameter(torch.randn(in_features, out_features) / in_features**0.5)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        return self.product(x, self.weight, self.bias)


def matmul(x, w, b):
    return x @ w  # torch.export keeps aten.matmul


def mm(x, w, b):
    return torch.mm(x, w)


def addmm(x, w, b):
    return torch.addmm(b, x, w)


def addmm_scaled(x, w, b):
    return torch.addmm(b, x, w, beta=0.5)


CONV = ["RESHAPE", "CONV2D", "RESCALE", "RESHAPE"]
WEIGHTED = [
    pytest.param(Weighted(matmul, 16, 8), (4, 16), id="x_at_w"),
    pytest.param(Weighted(matmul, 8, 6), (2, 5, 8), id="x_at_w_rank3_tokens"),
    pytest.param(Weighted(mm, 12, 5), (3, 12), id="mm"),
    pytest.param(Weighted(addmm, 16, 8), (1, 16), id="addmm_vector"),
    pytest.param(Weighted(addmm, 10, 7), (6, 10), id="addmm_batch6"),
]


@pytest.mark.parametrize("module, shape", WEIGHTED)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_weighted_product_matches_torch(module, shape, dtype, tmp_path):
    """Weights per channel along W's output axis (1), bias as the convolution's bias."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == (CONV if dtype != FP else ["RESHAPE", "CONV2D", "RESHAPE"])


class Mm(nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)


class Matmul(nn.Module):
    def forward(self, a, b):
        return a @ b


ACTIVATIONS = [
    pytest.param(Mm(), [(5, 8), ((8, 3), 2.0)], id="mm"),
    pytest.param(Matmul(), [(6, 16), (16, 6)], id="matmul_rank2"),
]


@pytest.mark.parametrize("module, shapes", ACTIVATIONS)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_product_of_activations_matches_torch(module, shapes, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    assert case.ops().count("MATMUL") == 1
    assert "CONV2D" not in case.ops()


def test_addmm_with_beta_is_the_linear_layer_and_a_scaled_bias(tmp_path):
    """beta scales the bias alone: the normalisation writes ``0.5 * b + x @ W`` out, the
    product still the linear layer's CONV2D (test_op_addmm.py has the other forms)."""
    case, report = run_case(Weighted(addmm_scaled, 8, 4), [(2, 8)], tmp_path)
    assert report["passed"]
    assert "CONV2D" in case.ops() and "ADD" in case.ops()
