"""aten.clone (torch.export's copy before reshaping a transposed view) lowers to nothing: the
normalisation removes it (and turns the view into a reshape), and a clone that still reaches
the lowering is an IDENTITY-free no-op."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class MergeHeads(nn.Module):
    """[batch, heads, tokens, dim] -> [batch, tokens, heads * dim]: torch's decomposition turns
    the reshape of the transposed view into clone + _unsafe_view."""

    def forward(self, x):
        return torch.softmax(x.transpose(1, 2).reshape(1, 6, 8), -1)


def test_clone_adds_no_operator(tmp_path):
    from pipeline.quant.program import load_program

    case, report = run_case(MergeHeads(), [(1, 2, 6, 4)], tmp_path, INT8)
    assert report["passed"]
    quantized = load_program(case.path("quantized.pt2"))
    assert not any(str(n.target) == "aten.clone.default" for n in quantized.graph.nodes)
    assert "IDENTITY" not in case.ops()


def test_clone_adds_no_operator_in_float(tmp_path):
    """The FP profile lowers the normalised float program: no clone, no IDENTITY."""
    from pipeline.quant.program import load_program

    case, report = run_case(MergeHeads(), [(1, 2, 6, 4)], tmp_path, FP)
    assert report["passed"]
    program = load_program(case.path("model.pt2"))
    assert not any(str(n.target) == "aten.clone.default" for n in program.graph.nodes)
    assert "IDENTITY" not in case.ops()
