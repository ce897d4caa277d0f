import pytest
import torch

from pipeline.errors import UserError
from pipeline.stages.quantize import quantize
from tests.tosa.lowering_cases import export_case

pytestmark = pytest.mark.needs_torch


def test_writes_a_loadable_quantized_program(tmp_path):
    from pipeline.quant.program import load_program

    case = export_case(torch.nn.Conv2d(3, 4, 3), [(1, 3, 6, 6)], tmp_path)
    out = tmp_path / "quantized.pt2"
    quantize(case.path("model.pt2"), case.path("calibration.pt"), out, scheme="a16w8")
    program = load_program(out)
    assert any("quantize_per_tensor" in str(n.target) for n in program.graph.nodes)
    assert sorted(p.name for p in tmp_path.iterdir() if "tmp" in p.name) == []


def test_bad_scheme_fails_before_reading_inputs(tmp_path):
    with pytest.raises(UserError, match=r"u85/quantize: quantization scheme must be one of"):
        quantize(
            tmp_path / "missing.pt2",
            tmp_path / "missing.pt",
            tmp_path / "q.pt2",
            scheme="fp8",
            where="u85/quantize",
        )
