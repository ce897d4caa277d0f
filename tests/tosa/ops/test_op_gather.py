"""torch.gather -> GATHER of single elements (the gathered dim last, every other dim a
batch): bit-exact against torch's quantized graph."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, integers, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class GatherTokens(nn.Module):
    """Pick tokens per batch (top-k / pooled positions): ``x.gather(1, idx[..., None].expand)``."""

    def forward(self, x, index):
        return x.gather(1, index[..., None].expand(-1, -1, x.shape[-1]))


class GatherLast(nn.Module):
    """One index per element along the last dim; the index covers part of the other dims."""

    def forward(self, x, index):
        return torch.gather(x, -1, index)


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize(
    "module, shapes",
    [
        pytest.param(GatherTokens(), [(2, 10, 8), integers((2, 3), 10)], id="tokens"),
        pytest.param(GatherLast(), [(2, 4, 6), integers((2, 3, 5), 6)], id="last_dim_partial"),
        pytest.param(GatherLast(), [(1, 3, 4, 6), integers((1, 3, 4, 2), 6)], id="nhwc_rank4"),
    ],
)
def test_gather_matches_torch_exactly(module, shapes, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert case.ops().count("GATHER") == 1


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize(
    "dim, shapes",
    [
        pytest.param(0, [(4, 5), integers((3, 5), 4)], id="dim0"),
        pytest.param(1, [(2, 257, 3), integers((2, 4, 3), 257)], id="dim1_257"),
        pytest.param(2, [(1, 2, 3, 4, 5), integers((1, 2, 3, 2, 5), 3)], id="rank5_dim2"),
        pytest.param(0, [(800,), integers((6,), 800)], id="rank1_800"),
    ],
)
def test_gather_along_any_dim(dim, shapes, dtype, tmp_path):
    module = Fn(lambda m, x, index: torch.gather(x, dim, index))
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
