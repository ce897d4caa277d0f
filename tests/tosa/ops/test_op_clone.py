"""aten.clone (torch.export's copy before reshaping a transposed view) lowers to nothing: the
normalisation removes it (and turns the view into a reshape), and a clone that still reaches
the lowering is an IDENTITY-free no-op."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class MergeHeads(nn.Module):
    """[batch, heads, tokens, dim] -> [batch, tokens, heads * dim]: torch's decomposition turns
    the reshape of the transposed view into clone + _unsafe_view."""

    def forward(self, x):
        return torch.softmax(x.transpose(1, 2).reshape(1, 6, 8), -1)


def test_clone_adds_no_operator(tmp_path):
    from pipeline.programs import load_program

    case, report = run_case(MergeHeads(), [(1, 2, 6, 4)], tmp_path, INT8)
    assert report["passed"]
    quantized = load_program(case.path("quantized.pt2"))
    assert not any(str(n.target) == "aten.clone.default" for n in quantized.graph.nodes)
    assert "IDENTITY" not in case.ops()


def test_clone_adds_no_operator_in_float(tmp_path):
    """The FP profile lowers the normalised float program: no clone, no IDENTITY."""
    from pipeline.programs import load_program

    case, report = run_case(MergeHeads(), [(1, 2, 6, 4)], tmp_path, FP)
    assert report["passed"]
    program = load_program(case.path("model.pt2"))
    assert not any(str(n.target) == "aten.clone.default" for n in program.graph.nodes)
    assert "IDENTITY" not in case.ops()


class ConstantOutputs(nn.Module):
    """Outputs that normalisation folds to constants (a fill, arithmetic on zeros_like)."""

    def forward(self, x):
        return x * 2, torch.full((2, 3), 1.5), torch.zeros_like(x) + 2


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_a_constant_output_is_quantized_like_any_output(dtype, tmp_path):
    _, report = run_case(ConstantOutputs(), [(2, 4)], tmp_path, dtype)
    assert report["passed"]
    for output in report["outputs"][1:]:
        assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
