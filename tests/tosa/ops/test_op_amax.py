"""REDUCE_MAX (aten.amax): the TOSA reference model against torch, over shapes and types."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Amax(nn.Module):
    def __init__(self, dims, keepdim):
        super().__init__()
        self.dims, self.keepdim = dims, keepdim

    def forward(self, x):
        return torch.amax(x, self.dims, keepdim=self.keepdim)


SHAPES = [
    pytest.param(Amax(-1, True), (1, 4, 16, 8), ["REDUCE_MAX"], id="nhwc_last_keepdim"),
    pytest.param(Amax((2, 3), False), (1, 4, 5, 6), ["REDUCE_MAX", "REDUCE_MAX", "RESHAPE"],
                 id="hw"),
    pytest.param(Amax(1, False), (2, 5, 7), ["REDUCE_MAX", "RESHAPE"], id="rank3_middle"),
]  # fmt: skip


@pytest.mark.parametrize("module, shape, ops", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_amax_matches_torch_exactly(module, shape, ops, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0].get("max_abs_diff_int", 0) == 0
    assert case.ops() == ops


class Values(nn.Module):
    """What users write: ``x.max(dim).values``, ``torch.min(x, dim, keepdim=True)[0]``."""

    def __init__(self, reduction, dim, keepdim=False):
        super().__init__()
        self.reduction, self.dim, self.keepdim = reduction, dim, keepdim

    def forward(self, x):
        return getattr(torch, self.reduction)(x, self.dim, keepdim=self.keepdim)[0] * 2


class Amin(Amax):
    def forward(self, x):
        return torch.amin(x, self.dims, keepdim=self.keepdim)


@pytest.mark.parametrize(
    "module, shape, ops",
    [
        pytest.param(Amin(-1, True), (1, 4, 16, 8), ["REDUCE_MIN"], id="amin_last_keepdim"),
        pytest.param(Amin((2, 3), False), (1, 4, 5, 6), ["REDUCE_MIN", "REDUCE_MIN", "RESHAPE"],
                     id="amin_hw"),
        pytest.param(Values("max", 1), (2, 5, 7), ["REDUCE_MAX", "RESHAPE"], id="max_dim_values"),
        pytest.param(Values("min", 2, True), (2, 5, 7), ["REDUCE_MIN"], id="min_dim_keepdim"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_amin_and_max_min_values_match_torch(module, shape, ops, dtype, tmp_path):
    """amin is REDUCE_MIN; max(x, dim) / min(x, dim) whose indices nothing reads are amax /
    amin (the normalisation's single-output form), then whatever follows."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert case.ops()[: len(ops)] == ops


class ValuesAndIndices(nn.Module):
    """``values, indices = torch.min(x, dim)`` with both read, the indices as int64 ids."""

    def __init__(self, reduction, dim, keepdim=False):
        super().__init__()
        self.reduction, self.dim, self.keepdim = reduction, dim, keepdim

    def forward(self, x):
        values, indices = getattr(torch, self.reduction)(x, self.dim, keepdim=self.keepdim)
        return values, indices + 1


@pytest.mark.parametrize(
    "module, shape",
    [
        pytest.param(ValuesAndIndices("min", 3), (1, 2, 2, 2), id="min_rank4_last"),
        pytest.param(ValuesAndIndices("min", -2, True), (2, 5, 7), id="min_keepdim_negative"),
        pytest.param(ValuesAndIndices("max", 1), (2, 6, 4), id="max_middle"),
        pytest.param(ValuesAndIndices("min", 0), (9,), id="min_rank1"),
    ],
)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_max_min_values_and_indices_match_torch(module, shape, dtype, tmp_path):
    """Indices read too: the normalisation adds argmax / argmin beside amax / amin (ARGMAX of
    the reversed codes for min: the first of equal values, as torch)."""
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert "ARGMAX" in case.ops()
    assert ("REDUCE_MIN" if module.reduction == "min" else "REDUCE_MAX") in case.ops()
