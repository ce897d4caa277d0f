"""aten.clone (torch.export's copy before reshaping a transposed view) lowers to nothing."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class MergeHeads(nn.Module):
    """[batch, heads, tokens, dim] -> [batch, tokens, heads * dim]. The softmax makes the
    quantizer decompose the program, which turns the reshape of the transposed view into
    clone + _unsafe_view."""

    def forward(self, x):
        return torch.softmax(x.transpose(1, 2).reshape(1, 6, 8), -1)


def test_clone_adds_no_operator(tmp_path):
    from pipeline.quant.program import load_program

    case, report = run_case(MergeHeads(), [(1, 2, 6, 4)], tmp_path, INT8)
    assert report["passed"]
    quantized = load_program(case.path("quantized.pt2"))
    assert any(str(n.target) == "aten.clone.default" for n in quantized.graph.nodes)
    assert "IDENTITY" not in case.ops()


def test_clone_adds_no_operator_in_float(tmp_path):
    """For the FP profile the lowering decomposes the softmax itself: the clone appears there."""
    from pipeline.quant.decompose import decompose
    from pipeline.quant.program import load_program

    case, report = run_case(MergeHeads(), [(1, 2, 6, 4)], tmp_path, FP)
    assert report["passed"]
    decomposed = decompose(load_program(case.path("model.pt2")))
    assert any(str(n.target) == "aten.clone.default" for n in decomposed.graph.nodes)
    assert "IDENTITY" not in case.ops()
