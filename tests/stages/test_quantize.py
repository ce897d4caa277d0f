import pytest
import torch

from pipeline.errors import UserError
from pipeline.stages.quantize import quantize
from tests.tosa.lowering_cases import export_case

pytestmark = pytest.mark.needs_torch


def test_writes_a_loadable_quantized_program(tmp_path):
    from pipeline.programs import load_program

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


def test_histogram_observer_is_for_int8_only(tmp_path):
    with pytest.raises(UserError, match=r"u85/quantize: calibration observer must be mse or "
                                        r"minmax for a16w8; got 'histogram'"):
        quantize(tmp_path / "missing.pt2", tmp_path / "missing.pt", tmp_path / "q.pt2",
                 scheme="a16w8", observer="histogram", where="u85/quantize")


@pytest.mark.needs_tosa_ref
def test_histogram_observer_raises_sqnr_of_the_example_cnn(tmp_path):
    """Measured through the whole chain (reference model vs float), not on observer internals."""
    from pathlib import Path

    from pipeline.stages.export import export
    from pipeline.stages.lower import lower
    from pipeline.verify.check import verify

    root = Path(__file__).resolve().parents[2]
    out = export(root / "models" / "cnn.py", "SmallCNN", tmp_path,
                 inputs=[{"shape": [1, 3, 32, 32]}], calibration_samples=16)
    sqnr = {}
    for observer in ("minmax", "histogram"):
        q, tosa, io = (tmp_path / f"{observer}{s}" for s in (".pt2", ".tosa", ".json"))
        quantize(out["model"], out["calibration"], q, observer=observer)
        lower(q, tosa, io)
        report = verify(out["model"], q, tosa, io, out["test_inputs"], tmp_path / f"{observer}.v")
        assert report["passed"]
        sqnr[observer] = report["outputs"][0]["sqnr_db_vs_float"]
    assert sqnr["histogram"] > sqnr["minmax"] + 2.0, sqnr
