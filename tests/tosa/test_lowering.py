"""The lowering driver: graph inputs/outputs, aliasing outputs, the pass order."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class TwoOutputs(nn.Module):
    def forward(self, x, y):
        s = x + y
        return s, torch.relu(s), s


def test_repeated_outputs_get_their_own_tensors(tmp_path):
    case, report = run_case(TwoOutputs(), [(1, 2, 3, 4), (1, 2, 3, 4)], tmp_path)
    assert report["passed"] and len(report["outputs"]) == 3
    names = [e["name"] for e in case.io()["outputs"]]
    assert len(set(names)) == 3
    assert case.ops().count("IDENTITY") == 1


def test_pass_list_orders_fx_before_tosa_and_explains_each():
    from pipeline.tosa.passes import PASSES

    levels = [p.level for p in PASSES]
    assert levels == sorted(levels, key=["fx", "tosa"].index)
    assert all(p.why for p in PASSES)
    assert [p.name for p in PASSES][:3] == ["convert_int64_constants", "fold_qdq", "fold_pad"]


class Overwrite(nn.Module):
    """``x.copy_(y)`` on a forward() argument: x's values are never read."""

    def forward(self, x, y):
        out = x.clone()
        out.copy_(y)
        return out


class ReturnsInput(nn.Module):
    """Returns one argument as it is, beside a computed value (a pass-through skip output)."""

    def forward(self, x, y):
        return x, y * 2


class IgnoresInput(nn.Module):
    """An argument the model never reads (an unused mask or token-type ids)."""

    def forward(self, x, mask):
        return torch.relu(x)


@pytest.mark.parametrize(
    "module, in_dtypes",
    [
        pytest.param(Overwrite(), ["int8", "int8"], id="copy_into_argument"),
        pytest.param(ReturnsInput(), ["int8", "int8"], id="returned_input"),
        pytest.param(IgnoresInput(), ["int8", "int8"], id="unread_input"),
    ],
)
def test_inputs_returned_or_never_read_keep_their_place(module, in_dtypes, tmp_path):
    """Every argument stays an input of the graph (the runtime's API is the model's); one
    returned as it is gets qparams from a clone the quantizer annotates, one never read is an
    int8 input whose values do not matter."""
    case, report = run_case(module, [(2, 4, 5), (2, 4, 5)], tmp_path)
    assert report["passed"]
    assert [entry["dtype"] for entry in case.io()["inputs"]] == in_dtypes
