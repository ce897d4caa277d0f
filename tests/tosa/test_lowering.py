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
