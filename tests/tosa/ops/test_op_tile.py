"""expand / repeat of computed values -> TILE: bit-exact against torch's quantized graph."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, booleans, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Repeat(nn.Module):
    def forward(self, x):
        return x.repeat(1, 2, 1), x.repeat(2, 1, 1, 1)  # the second adds a leading dim


class ExpandTokens(nn.Module):
    """A per-sequence vector expanded over its tokens, then used (as a learned query is)."""

    def forward(self, x, tokens):
        return x.mean(1, keepdim=True).expand(-1, tokens.shape[1], -1) + tokens


class ExpandMask(nn.Module):
    """A padding mask expanded to the attention shape (HF's ``_expand_mask``)."""

    def forward(self, mask):
        return mask[:, None, None, :].expand(2, 1, 6, 6)


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_repeat(dtype, tmp_path):
    case, report = run_case(Repeat(), [(2, 3, 4)], tmp_path, dtype)
    assert report["passed"]
    assert all(o.get("max_abs_diff_int", o.get("max_abs_diff")) == 0 for o in report["outputs"])
    assert case.ops().count("TILE") == 2


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_expand_of_computed_values(dtype, tmp_path):
    case, report = run_case(ExpandTokens(), [(2, 5, 8), (2, 5, 8)], tmp_path, dtype)
    assert report["passed"]
    assert "TILE" in case.ops()


def test_expand_of_a_bool_mask(tmp_path):
    case, report = run_case(ExpandMask(), [booleans((2, 6))], tmp_path)
    assert report["passed"]
    assert case.io()["outputs"][0]["dtype"] == "bool"
    assert "TILE" in case.ops()


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize(
    "fn, shape",
    [
        pytest.param(lambda m, x: x.expand(2, 4, 6, 3), (4, 1, 3), id="expand_new_dim"),
        pytest.param(lambda m, x: torch.broadcast_to(x, (4, 257, 3)), (4, 1, 3),
                     id="broadcast_to_257"),
        pytest.param(lambda m, x: x.repeat(2, 1, 3), (2, 6, 3), id="repeat_rank3"),
        pytest.param(lambda m, x: x.repeat(800), (1,), id="repeat_rank1_800"),
        pytest.param(lambda m, x: x.expand(1, 2, 3, 4, 5), (1, 1, 3, 1, 5), id="expand_rank5"),
    ],
)  # fmt: skip
def test_expand_and_repeat_shapes(fn, shape, dtype, tmp_path):
    case, report = run_case(Fn(fn), [shape], tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert "TILE" in case.ops()
