"""Export stage with the real torch.export: random inputs, input factories, calibration folders."""

from __future__ import annotations

import pytest

from pipeline.errors import StageError
from pipeline.stages.export import export

pytestmark = pytest.mark.needs_torch

MODEL = """\
import torch

class Net(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2

def make():
    return Net()

def inputs():
    return (torch.rand(1, 4) - 0.5,)

def not_a_module():
    return 3

def broken():
    raise RuntimeError("no weights here")
"""


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "net.py"
    path.write_text(MODEL)
    return path


def _load(path):
    import torch
    return torch.load(path, weights_only=False)


def test_random_inputs_follow_the_spec_and_are_reproducible(source, tmp_path):
    spec = [{"shape": [2, 3], "dtype": "float32", "range": [0.0, 4.0]}]
    a = export(source, "Net", tmp_path / "a", inputs=spec, calibration_samples=3)
    b = export(source, "make", tmp_path / "b", inputs=spec, calibration_samples=3)
    calibration = _load(a["calibration"])
    assert len(calibration) == 3 and calibration[0][0].shape == (2, 3)
    assert all(0.0 <= float(t[0].min()) and float(t[0].max()) < 4.0 for t in calibration)
    tests = _load(a["test_inputs"])
    assert len(tests) == 4 and not tests[0][0].equal(tests[1][0])
    assert all(x[0].equal(y[0]) for x, y in zip(tests, _load(b["test_inputs"])))


def test_exported_program_loads_and_runs(source, tmp_path):
    import torch
    out = export(source, "Net", tmp_path, inputs=[{"shape": [1, 4]}], calibration_samples=1)
    program = torch.export.load(out["model"])
    x = torch.tensor([[-1.0, 0.5, 2.0, -0.1]])
    assert program.module()(x).tolist() == [[0.0, 1.0, 4.0, 0.0]]


def test_input_factory_and_calibration_folder(source, tmp_path):
    import torch
    folder = tmp_path / "calib"
    folder.mkdir()
    for i in range(2):
        torch.save((torch.full((1, 4), float(i)),), folder / f"s{i}.pt")
    out = export(source, "Net", tmp_path / "o", input_factory=(source, "inputs"),
                 calibration_folder=folder)
    assert [float(s[0][0, 0]) for s in _load(out["calibration"])] == [0.0, 1.0]
    assert _load(out["test_inputs"])[0][0].shape == (1, 4)


@pytest.mark.parametrize("attr, message", [
    ("Missing", r"m/export: .*net.py must define 'Missing'; got only .*Net"),
    ("not_a_module", r"m/export: not_a_module\(\) must return a torch.nn.Module; got int"),
    ("broken", r"m/export: broken\(\) must build an nn.Module; it raised RuntimeError: no weights"),
], ids=["missing-attr", "not-a-module", "raises"])
def test_user_mistakes_name_the_model_and_what_was_expected(source, tmp_path, attr, message):
    with pytest.raises(StageError, match=message):
        export(source, attr, tmp_path, inputs=[{"shape": [1, 4]}], where="m/export")


def test_empty_calibration_folder_is_an_error(source, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(StageError, match="calibration folder must hold"):
        export(source, "Net", tmp_path / "o", inputs=[{"shape": [1, 4]}],
               calibration_folder=tmp_path / "empty")
