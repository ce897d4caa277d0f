import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from pipeline.errors import UnsupportedOperatorError, UserError
from pipeline.stages.lower import lower
from tests.tosa.lowering_cases import FP, export_case, lower_case

REPO = Path(__file__).resolve().parents[2]


def test_stage_modules_import_without_torch():
    code = (
        "import sys; import pipeline.stages.quantize, pipeline.stages.lower, "
        "pipeline.verify.check; assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


class TwoInputs(nn.Module):
    def forward(self, x, y):
        return torch.flatten(x + y, 1)


@pytest.mark.needs_torch
def test_io_json_follows_forward_arguments_and_outputs(tmp_path):
    case = lower_case(TwoInputs(), [(1, 2, 3, 4), (1, 2, 3, 4)], tmp_path)
    io = json.loads(case.path("io.json").read_text())
    assert io["tosa_spec"] == "TOSA-1.0+INT"
    assert [e["name"] for e in io["inputs"]] == ["x", "y"]
    x = io["inputs"][0]
    assert x["dtype"] == "int8" and x["layout"] == "NHWC"
    assert x["shape"] == [1, 3, 4, 2] and x["torch_shape"] == [1, 2, 3, 4]
    assert isinstance(x["scale"], float) and isinstance(x["zero_point"], int)
    out = io["outputs"][0]
    assert out["shape"] == [1, 24] and out["layout"] == "torch"


class CumProd(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        y = self.conv(x)
        return torch.cumprod(y, dim=1)  # the unsupported line


@pytest.mark.needs_torch
def test_unsupported_operator_names_op_source_line_and_where(tmp_path):
    line = next(
        i
        for i, text in enumerate(Path(__file__).read_text().splitlines(), 1)
        if "the unsupported line" in text and "torch.cumprod" in text
    )
    with pytest.raises(UnsupportedOperatorError) as info:
        lower_case(CumProd(), [(1, 3, 6, 6)], tmp_path, where="u85-linux/lower")
    message = str(info.value)
    assert message.startswith("u85-linux/lower: cumprod: operator aten.cumprod.default must be")
    assert f"test_lower.py:{line} (return torch.cumprod(y, dim=1)" in message
    assert not (tmp_path / "model.tosa").exists()


@pytest.mark.needs_torch
def test_fp_profile_lowers_the_float_program(tmp_path):
    case = lower_case(
        nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()),
        [(1, 3, 6, 6)],
        tmp_path,
        FP,
    )
    assert case.ops() == ["CONV2D", "CLAMP"]  # BatchNorm folded
    assert case.io()["inputs"][0]["dtype"] == "float32"


@pytest.mark.needs_torch
def test_float_program_is_rejected_by_the_int_profile(tmp_path):
    case = export_case(nn.Conv2d(3, 4, 3), [(1, 3, 6, 6)], tmp_path)
    with pytest.raises(
        UserError,
        match=r"^u55/lower: the program must be quantized \(hold quantize/dequantize "
        r"operators\) for TOSA-1.0\+INT; got a float program",
    ):
        lower(case.path("model.pt2"), tmp_path / "m.tosa", tmp_path / "io.json", where="u55/lower")


def test_bad_spec(tmp_path):
    with pytest.raises(UserError, match=r"u55/lower: tosa spec must name profile INT or FP after the version; got 'TOSA-1.0\+int16'"):
        lower(
            tmp_path / "q.pt2",
            tmp_path / "m.tosa",
            tmp_path / "io.json",
            spec="TOSA-1.0+int16",
            where="u55/lower",
        )


@pytest.mark.needs_torch
@pytest.mark.needs_tosa_ref
def test_input_names_from_targets_yaml_keep_the_graph_name_for_the_reference_model(tmp_path):
    from tests.tosa.lowering_cases import verify_case

    case = lower_case(TwoInputs(), [(1, 2, 3, 4), (1, 2, 3, 4)], tmp_path)
    lower(case.path("quantized.pt2"), case.tosa, case.path("io.json"), input_names=["a", "b"])
    io = json.loads(case.path("io.json").read_text())
    assert [(e["name"], e["tosa_name"]) for e in io["inputs"]] == [("a", "x"), ("b", "y")]
    assert verify_case(case)["passed"]


@pytest.mark.needs_torch
def test_input_names_must_match_the_model(tmp_path):
    case = lower_case(TwoInputs(), [(1, 2, 3, 4), (1, 2, 3, 4)], tmp_path)
    with pytest.raises(UserError, match=r"m/lower: inputs must be named once each; the model "
                                        r"takes 2, targets.yaml names 1"):
        lower(case.path("quantized.pt2"), case.tosa, case.path("io.json"), input_names=["a"],
              where="m/lower")


def test_lower_stage_code_version_covers_the_decompositions_it_runs():
    """lower_program decomposes float programs with normalise/decompose.py: a change there must
    re-run the lower stage (its cache key hashes the stage's code files)."""
    from pipeline.graph.code import code_files
    from pipeline.graph.stages import STAGES

    assert REPO / "pipeline" / "normalise" / "decompose.py" in code_files(STAGES["lower"])


class TwoBlockers(nn.Module):
    def forward(self, x):
        y = torch.cumprod(x, dim=1)  # first blocker
        z = torch.sort(y, dim=-1).values  # second blocker
        return torch.cumprod(z, dim=2)  # first blocker again


@pytest.mark.needs_torch
def test_every_unsupported_operator_is_named_at_once(tmp_path):
    """One error lists each unsupported operator with its count and source lines."""
    with pytest.raises(UnsupportedOperatorError) as info:
        lower_case(TwoBlockers(), [(1, 3, 6, 6)], tmp_path, where="u85-linux/lower")
    message = str(info.value)
    assert message.startswith("u85-linux/lower: every operator must be one that the TOSA "
                              "lowering supports; got 2 that are not (3 places):")
    assert "aten.cumprod.default (x2) at " in message and "aten.sort.default (x1) at " in message
    assert "test_lower.py" in message and "(y = torch.cumprod(x, dim=1)" in message
    assert "(z = torch.sort(y, dim=-1).values" in message
    assert message.count("docs/operators.md") == 1
