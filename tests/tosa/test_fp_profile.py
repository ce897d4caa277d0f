"""The TOSA-1.0+FP profile end to end: every example model in models/ and the composite
operators the lowering decomposes itself for float programs, lowered and verified against
torch in the TOSA reference model (verify's FP tolerance: max |diff| <= 1e-3 * max |torch|)."""

import importlib
from pathlib import Path

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import FP, lower_case, run_case, verify_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

MODELS_DIR = Path(__file__).resolve().parents[2] / "models"


def example_models() -> dict[str, type]:
    """Every models/*.py's model class (the nn.Module defined there with example_shapes)."""
    found = {}
    for path in sorted(MODELS_DIR.glob("*.py")):
        module = importlib.import_module(f"models.{path.stem}")
        (model,) = (
            v
            for v in vars(module).values()
            if isinstance(v, type)
            and issubclass(v, nn.Module)
            and v.__module__ == module.__name__
            and hasattr(v, "example_shapes")
        )
        found[path.stem] = model
    return found


MODELS = example_models()


def test_every_shipped_model_is_covered():
    assert set(MODELS) >= {
        "add", "cnn", "ds_cnn", "resnet8", "mobilenet_v1", "autoencoder", "mobilenet_v2",
        "transformer_block",
    }  # fmt: skip


@pytest.mark.parametrize("name", sorted(MODELS))
def test_example_model_lowers_and_verifies_in_float(name, tmp_path):
    model = MODELS[name]
    case = lower_case(model(), list(model.example_shapes), tmp_path, FP, where=f"{name}/lower")
    report = verify_case(case, where=f"{name}/verify")
    assert report["passed"]
    assert report["tosa_spec"] == "TOSA-1.0+FP"
    for output in report["outputs"]:
        assert output["max_abs_diff"] <= output["tolerance"]
        assert output["sqnr_db_vs_float"] is None or output["sqnr_db_vs_float"] > 100
    io = case.io()
    assert {e["dtype"] for e in io["inputs"] + io["outputs"]} == {"float32"}


class Composites(nn.Module):
    """Every composite operator decompose.py writes out: layer_norm, softmax, log_softmax,
    unbind, chunk and split."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.norm = nn.LayerNorm(8)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        a, b = torch.chunk(self.norm(x), 2, dim=1)
        first, _, third = torch.unbind(a + b, dim=2)
        c, d = torch.split(torch.softmax(first, -1) + third, [3, 5], dim=-1)
        return torch.log_softmax(c, -1), d


def test_composite_operators_are_decomposed_for_float_programs(tmp_path):
    case, report = run_case(Composites(), [((1, 4, 3, 8), 3.0)], tmp_path, FP)
    assert report["passed"]
    assert len(report["outputs"]) == 2
    ops = case.ops()
    for op in ("RSQRT", "EXP", "RECIPROCAL", "LOG", "SLICE", "REDUCE_MAX", "AVG_POOL2D"):
        assert op in ops, op


class Normalize(nn.Module):
    def forward(self, x):
        return nn.functional.layer_norm(x, [8])  # the line every decomposed op must name


def test_decomposed_operators_keep_the_users_source_line(tmp_path):
    from pipeline.programs import load_program
    from pipeline.tosa.lowering import lower_program
    from pipeline.tosa.spec import parse_spec

    case, _ = run_case(Normalize(), [(1, 3, 8)], tmp_path, FP)
    lowered = lower_program(load_program(case.path("model.pt2")), parse_spec("TOSA-1.0+FP"))
    assert "RSQRT" in lowered.graph.op_counts()
    for operator in lowered.graph.operators:
        assert "test_fp_profile.py" in operator.location and "layer_norm" in operator.location


def test_integer_spec_still_rejects_a_float_program(tmp_path):
    from pipeline.errors import UserError
    from pipeline.stages.lower import lower
    from tests.tosa.lowering_cases import export_case

    case = export_case(Normalize(), [(1, 3, 8)], tmp_path)
    with pytest.raises(UserError, match="must be quantized"):
        lower(case.path("model.pt2"), case.tosa, case.path("io.json"), spec="TOSA-1.0+INT")
