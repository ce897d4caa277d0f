"""Bad user input ends the export with one clear message: never a traceback, a hang or an
exit without a word.

Found by fuzzing builds (a traceback in 27 of 100): inputs factories that raise, are not
callable or return no tensors; NaN/inf and int64 inputs; calibration folders holding junk;
absurd shapes and sample counts; model files that edit sys.path, exit, raise
KeyboardInterrupt or never return. Most cases call the stage functions directly; the last
ones run ``doit`` in a scratch project, the way users meet them. The models are written the
way users write them: in-place activations, ``out += ...``, dropout, BatchNorm, int64 ids.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pipeline.errors import ConfigError, StageError, UserError
from pipeline.graph import timeout
from pipeline.export.program import load_attr
from pipeline.stages.export import export
from tests.e2e.runner import ROOT, doit, doit_argv

pytestmark = pytest.mark.needs_torch


NET = '''\
import torch
from torch import nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.drop = nn.Dropout(p=0.1)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        out = self.relu(self.bn(self.conv(x)))
        out += out.mean(dim=1, keepdim=True)
        return self.head(self.drop(out).mean(dim=(2, 3)))


class TokenNet(nn.Module):
    def __init__(self, vocab=50, dim=16):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(dim, 3)

    def forward(self, ids):
        h = self.embed(ids)
        h += self.drop(torch.relu(self.proj(h)))
        return self.head(h.mean(dim=1))


class IdsIntoLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 3)

    def forward(self, ids):
        return torch.relu_(self.fc(ids))


def frames():
    return (torch.rand(1, 3, 8, 8),)


def token_ids():
    return (torch.randint(0, 50, (1, 12)),)
'''
IMAGE = [{"shape": [1, 3, 8, 8]}]


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture
def net(tmp_path) -> Path:
    return _write(tmp_path, "net.py", NET)


def _factory(tmp_path, body: str) -> tuple[Path, str]:
    """An inputs factory ``make_inputs`` in a file beside the model."""
    text = "import numpy as np\nimport torch\n\n\ndef make_inputs():\n" + textwrap.indent(
        textwrap.dedent(body), "    ")
    return _write(tmp_path, "data.py", text), "make_inputs"


def _export(net, tmp_path, **kwargs):
    kwargs.setdefault("calibration_samples", 2)
    return export(net, kwargs.pop("attr", "TinyNet"), tmp_path / "out", where="m/export",
                  **kwargs)


def _no_outputs(tmp_path):
    return not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


# --- inputs factories --------------------------------------------------------------------

def test_factory_that_raises_names_its_line(net, tmp_path):
    factory = _factory(tmp_path, """\
        frames = np.load("frames.npy")  # not there
        return torch.from_numpy(frames)
    """)
    with pytest.raises(StageError, match=r"^m/export: make_inputs\(\) must return the model's "
                       r"inputs; it raised FileNotFoundError: .*frames.npy.* at "
                       r".*data.py:6 \(frames = np.load"):
        _export(net, tmp_path, input_factory=factory)
    assert _no_outputs(tmp_path)


def test_factory_that_is_not_callable(net, tmp_path):
    path = _write(tmp_path, "data.py", "import torch\nmake_inputs = torch.rand(1, 3, 8, 8)\n")
    with pytest.raises(StageError, match=r"data.py:make_inputs must be a function returning "
                                         r"the model's input tensors; got Tensor$"):
        _export(net, tmp_path, input_factory=(path, "make_inputs"))


@pytest.mark.parametrize("body, got", [
    ("return 'frame_000.png'", "a str"),
    ("return {'x': torch.rand(1, 3, 8, 8)}", "a dict"),
    ("return (torch.rand(1, 3, 8, 8), None)", "a tuple whose item 1 is a NoneType"),
    ("return [np.zeros((1, 3, 8, 8), np.float32)]", "a list whose item 0 is a ndarray"),
    ("return ()", "an empty tuple"),
    ("torch.rand(1, 3, 8, 8)  # forgot the return", "a NoneType"),
], ids=["str", "dict", "none-item", "numpy", "empty", "no-return"])
def test_factory_that_returns_no_tensors(net, tmp_path, body, got):
    with pytest.raises(StageError, match=r"m/export: the example input from make_inputs\(\) "
                       r"must be a tensor or a tuple of tensors \(one per model input\); got "
                       + re.escape(got) + "$"):
        _export(net, tmp_path, input_factory=_factory(tmp_path, body))


def test_factory_whose_shapes_change_between_calls(net, tmp_path):
    factory = _factory(tmp_path, """\
        make_inputs.calls = getattr(make_inputs, "calls", 0) + 1
        size = 8 if make_inputs.calls == 1 else 16  # the first call is the example
        return torch.rand(1, 3, size, size)
    """)
    with pytest.raises(StageError, match=re.escape(
            "calibration sample 0 from make_inputs() must match the example input (the model "
            "is exported for it): float32[1, 3, 8, 8]; got float32[1, 3, 16, 16]")):
        _export(net, tmp_path, input_factory=factory)


@pytest.mark.parametrize("poison, got", [
    ("x[0, 1, 2, 3] = float('nan')", "got 1 NaN and 0 inf among its 192 values"),
    ("x /= 0.0", "got 0 NaN and 192 inf among its 192 values"),
    ("x[0, 0] = -float('inf')", "got 0 NaN and 64 inf among its 192 values"),
], ids=["nan", "inf", "minus-inf"])
def test_factory_with_non_finite_values(net, tmp_path, poison, got):
    factory = _factory(tmp_path, f"x = torch.rand(1, 3, 8, 8)\n{poison}\nreturn (x,)\n")
    with pytest.raises(StageError, match=r"input 0 of the example input from make_inputs\(\) "
                                         r"must be finite; " + re.escape(got)):
        _export(net, tmp_path, input_factory=factory)


def test_factory_returning_float64_says_how_to_convert(net, tmp_path):
    factory = _factory(tmp_path, "return torch.from_numpy(np.random.rand(1, 3, 8, 8))\n")
    with pytest.raises(StageError, match=r"input 0 of the example input from make_inputs\(\) "
                       r"must be one of float32, int8, int16, int32, int64, bool; got float64\. "
                       r"Convert it to float32 \(tensor.float\(\)"):
        _export(net, tmp_path, input_factory=factory)


def test_random_inputs_overflowing_float32_are_not_finite(net, tmp_path):
    with pytest.raises(StageError, match=r"input 0 of the example input drawn from "
                                         r"targets.yaml must be finite; got 0 NaN and"):
        _export(net, tmp_path, inputs=[{"shape": [1, 3, 8, 8], "range": [-3e38, 3e38]}])


# --- int64 inputs ------------------------------------------------------------------------

def test_int64_token_ids_export(net, tmp_path):
    import torch

    out = _export(net, tmp_path, attr="TokenNet", input_factory=(net, "token_ids"))
    calibration = torch.load(out["calibration"], weights_only=True)
    assert calibration[0][0].dtype == torch.int64 and out["model"].is_file()
    out = export(net, "TokenNet", tmp_path / "spec", calibration_samples=2,
                 inputs=[{"shape": [1, 12], "dtype": "int64", "range": [0, 49]}])
    assert out["model"].is_file()


def test_int64_ids_past_the_embedding_name_the_line(net, tmp_path):
    with pytest.raises(StageError, match=r"the exported model must run on the example input; "
                       r"it raised IndexError: index out of range in self at .*net.py:\d+ "
                       r"\(h = self.embed\(ids\)\)"):
        _export(net, tmp_path, attr="TokenNet",
                inputs=[{"shape": [1, 12], "dtype": "int64", "range": [0, 1000]}])


def test_int64_ids_fed_to_a_linear_name_the_line(net, tmp_path):
    # torch.export traces this without complaint; quantization failed with a KeyError.
    with pytest.raises(StageError, match=r"it raised RuntimeError: mat1 and mat2 must have the "
                       r"same dtype.* at .*net.py:\d+ \(return torch.relu_\(self.fc\(ids\)\)\)"):
        _export(net, tmp_path, attr="IdsIntoLinear", input_factory=(net, "token_ids"))


def test_int64_beyond_int32(net, tmp_path):
    factory = _factory(tmp_path, "return torch.full((1, 12), 2**40)\n")
    with pytest.raises(StageError, match=r"input 0 of the example input from make_inputs\(\) "
                       r"must lie within -2147483648..2147483647 \(int64 inputs are int32 in "
                       r"the NPU graph\); got 1099511627776..1099511627776"):
        _export(net, tmp_path, attr="TokenNet", input_factory=factory)


# --- calibration folders -----------------------------------------------------------------

def _folder(tmp_path, files: dict[str, object]) -> Path:
    import numpy as np
    import torch

    folder = tmp_path / "calib"
    folder.mkdir()
    torch.save(torch.rand(1, 3, 8, 8), folder / "a_good.pt")
    for name, value in files.items():
        if isinstance(value, bytes):
            (folder / name).write_bytes(value)
        elif name.endswith(".npy"):
            np.save(folder / name, value)
        else:
            torch.save(value, folder / name)
    return folder


def _calibration_cases():
    import numpy as np
    import torch

    return {
        "not-torch": ({"b.pt": b"PK\x03\x04 not really"}, r"must be a tensor or a tuple of "
                      r"tensors saved with torch.save; torch.load could not read it \("),
        "pickle": ({"b.pt": b"\x80\x04\x95 garbage"}, r"must be a tensor or a tuple of "
                   r"tensors saved with torch.save; torch.load could not read it "
                   r"\(UnpicklingError: Unsupported operand 149\)$"),
        "not-numpy": ({"b.npy": b"\x93NUMPY\x07 junk"}, r"must be an array saved with "
                      r"numpy.save; numpy.load could not read it \(ValueError: "),
        "shape": ({"b.pt": torch.rand(3, 8, 8)}, r"must match the example input \(the model "
                  r"is exported for it\): float32\[1, 3, 8, 8\]; got float32\[3, 8, 8\]$"),
        "float64": ({"b.npy": np.random.rand(1, 3, 8, 8)}, r"must match the example input "
                    r"\(the model is exported for it\): float32\[1, 3, 8, 8\]; got "
                    r"float64\[1, 3, 8, 8\]\. Convert it to float32 \(tensor.float\(\), "
                    r"array.astype\(numpy.float32\)\)$"),
        "dict": ({"b.pt": {"image": torch.rand(1, 3, 8, 8)}}, r"must be a tensor or a tuple "
                 r"of tensors \(one per model input\); got a dict"),
        "nan": ({"b.pt": torch.full((1, 3, 8, 8), float("nan"))}, r"must be finite; got 192 "
                r"NaN"),
        "two-inputs": ({"b.pt": (torch.rand(1, 3, 8, 8),) * 2}, r"must match the example "
                       r"input \(the model is exported for it\): float32\[1, 3, 8, 8\]; got "
                       r"float32\[1, 3, 8, 8\], float32\[1, 3, 8, 8\]$"),
    }


@pytest.mark.parametrize("case", ["not-torch", "pickle", "not-numpy", "shape", "float64",
                                  "dict", "nan", "two-inputs"])
def test_calibration_file_that_does_not_fit_is_named(net, tmp_path, case):
    files, message = _calibration_cases()[case]
    folder = _folder(tmp_path, files)
    name = next(iter(files))
    with pytest.raises(StageError, match=rf"^m/export: (input 0 of )?calibration file "
                                         rf"{re.escape(str(folder / name))} " + message):
        _export(net, tmp_path, inputs=IMAGE, calibration_folder=folder)
    assert _no_outputs(tmp_path)


def test_calibration_ids_past_the_embedding_name_the_file(net, tmp_path):
    import torch

    folder = tmp_path / "calib"
    folder.mkdir()
    torch.save(torch.full((1, 12), 7), folder / "0.pt")
    torch.save(torch.full((1, 12), 73), folder / "1.pt")
    with pytest.raises(StageError, match=r"the exported model must run on calibration file "
                       rf"{re.escape(str(folder / '1.pt'))}; it raised IndexError"):
        _export(net, tmp_path, attr="TokenNet", input_factory=(net, "token_ids"),
                calibration_folder=folder)


# --- sizes: configuration bounds and what the stage holds ---------------------------------

def _config(tmp_path, model_yaml: str):
    from pipeline.config import load_config

    _write(tmp_path, "net.py", NET)
    path = _write(tmp_path, "targets.yaml", "models:\n  m:\n    source: net.py:TinyNet\n"
                  + textwrap.indent(model_yaml, "    ")
                  + "targets:\n  host:\n    cpu: host\n    npu: null\n    models: [m]\n")
    return load_config(path)


def test_absurd_input_shape_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=re.escape(
            "targets.yaml:4: models.m.inputs[0].shape: must have at most 2**28 (268435456) "
            "elements; got [1000000000000] (1000000000000 elements)")):
        _config(tmp_path, "inputs: [{shape: [1000000000000]}]\n")
    _config(tmp_path, "inputs: [{shape: [1, 3, 2160, 3840]}]\n")  # a 4K frame is fine


def test_absurd_sample_count_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=re.escape(
            "targets.yaml:5: models.m.calibration.samples: must be <= 100000; got "
            "1000000000000000000")):
        _config(tmp_path, "inputs: [{shape: [1, 3, 8, 8]}]\n"
                          "calibration: {samples: 1000000000000000000}\n")


def test_calibration_too_large_for_memory_is_refused_before_drawing(net, tmp_path):
    started = time.perf_counter()
    with pytest.raises(StageError, match=r"the calibration and test inputs must fit in 4 GiB; "
                       r"got 100004 input tuples of 602112 bytes \(56.1 GiB\)\. Lower "
                       r"calibration.samples"):
        _export(net, tmp_path, inputs=[{"shape": [1, 3, 224, 224]}],
                calibration_samples=100_000)
    assert time.perf_counter() - started < 10


# --- what a model file does to the process ------------------------------------------------

@pytest.mark.parametrize("edit", [
    "sys.path.remove(HERE)",
    "sys.path[:] = [p for p in sys.path if 'site-packages' not in p] + ['/opt/mine']",
    "sys.path.insert(0, '/opt/mine'); sys.path.reverse()",
    "sys.path = ['/opt/mine']",
], ids=["remove-own-folder", "drop-entries", "insert-and-reorder", "rebind"])
def test_model_editing_sys_path_leaves_it_as_it_was(tmp_path, edit):
    before = list(sys.path)
    path = _write(tmp_path, "net.py", f"import os\nimport sys\nHERE = os.path.dirname("
                                      f"os.path.abspath(__file__))\n{edit}\n" + NET)
    assert load_attr(path, "TinyNet", "m/export").__name__ == "TinyNet"
    assert sys.path == before


@pytest.mark.parametrize("where, code, message", [
    ("import", "raise SystemExit(3)\n", r"importing .*net.py must succeed; it raised "
     r"SystemExit: 3 at .*net.py:1 \(raise SystemExit\(3\)\)\. Code that exits"),
    ("import", "import argparse\nargparse.ArgumentParser().parse_args(['--epochs', '3'])\n",
     r"importing .*net.py must succeed; it raised SystemExit: 2 at .*net.py:2 \(argparse"),
    ("import", "raise KeyboardInterrupt\n", r"importing .*net.py must succeed; it raised "
     r"KeyboardInterrupt at .*net.py:1 \(raise KeyboardInterrupt\)\. Code that exits"),
    ("factory", "def build():\n    raise SystemExit('no GPU')\n", r"build\(\) must build an "
     r"nn.Module; it raised SystemExit: no GPU at .*net.py:\d+ \(raise SystemExit"),
    ("factory", "def build():\n    raise KeyboardInterrupt\n", r"build\(\) must build an "
     r"nn.Module; it raised KeyboardInterrupt at .*net.py:\d+"),
    ("forward", "class Stop(TinyNet):\n    def forward(self, x):\n        raise "
     "KeyboardInterrupt('stop')\n", r"torch.export must capture the model; it raised "
     r"KeyboardInterrupt: stop at .*net.py:\d+ \(raise KeyboardInterrupt\('stop'\)\)"),
], ids=["exit-at-import", "argparse-at-import", "interrupt-at-import", "exit-in-factory",
        "interrupt-in-factory", "interrupt-in-forward"])
def test_exit_and_interrupt_from_the_model_file_are_its_errors(tmp_path, where, code, message):
    text = code + NET if where == "import" else NET + "\n\n" + code
    net = _write(tmp_path, "net.py", text)
    attr = {"import": "TinyNet", "factory": "build", "forward": "Stop"}[where]
    with pytest.raises(StageError, match=message):
        _export(net, tmp_path, attr=attr, inputs=IMAGE)


@pytest.mark.parametrize("where, code, message", [
    ("import", "import os\nos._exit(0)\n", r"importing .*net.py must succeed; it called "
     r"os._exit\(0\) at .*net.py:2 \(os._exit\(0\)\)\. Code that exits"),
    ("factory", "def build():\n    from os import _exit\n    _exit(3)\n", r"build\(\) must "
     r"build an nn.Module; it called os._exit\(3\) at .*net.py:\d+ \(_exit\(3\)\)"),
    ("forward", "class Stop(TinyNet):\n    def forward(self, x):\n        import os\n"
     "        os._exit(0)\n", r"torch.export must capture the model; it called os._exit\(0\) "
     r"at .*net.py:\d+ \(os._exit\(0\)\)"),
], ids=["import", "factory", "forward"])
@pytest.mark.usefixtures("canary")  # nothing outside the build is touched (issue 28)
def test_os_exit_from_the_model_file_is_its_error_not_the_end_of_the_build(tmp_path, where,
                                                                           code, message):
    """os._exit(0) would end the build's process at once with status 0: a build that built
    nothing and said nothing (issue 28 #9)."""
    text = code + NET if where == "import" else NET + "\n\n" + code
    net = _write(tmp_path, "net.py", text)
    attr = {"import": "TinyNet", "factory": "build", "forward": "Stop"}[where]
    with pytest.raises(StageError, match=message):
        _export(net, tmp_path, attr=attr, inputs=IMAGE)
    assert os._exit.__module__ == "posix"  # given back


def test_os_exit_in_a_forked_child_still_ends_the_child(tmp_path):
    """A DataLoader worker (a fork) ends with os._exit(): that one is not refused."""
    body = """\
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 7
        return torch.rand(1, 3, 8, 8),
    """
    net = _write(tmp_path, "net.py", NET)
    data, name = _factory(tmp_path, "import os\n" + textwrap.dedent(body))
    _export(net, tmp_path, input_factory=(data, name))
    assert (tmp_path / "out" / "model.pt2").is_file()


@pytest.mark.parametrize("returns, got", [
    ("None", "got None$"),
    ("3", "got int 3$"),
    ("y, 0.5", r"got float 0.5 as output\[1\]$"),
    ("()", r"got nothing \(an empty tuple\)$"),
    ("{'logits': y, 'hidden': x}", r"got a dict \(output\['logits'\], output\['hidden'\]\)\. "
     r"Return the tensors as a tuple in a fixed order instead, e\.g\. `return out\['logits'\], "
     r"out\['hidden'\]`"),
    ("y, {'aux': x}", r"got a dict \(output\[0\], output\[1\]\['aux'\]\)"),
    ("y.sum().item()", r"got a Python \w+ computed in the graph \(\.item\(\), \.tolist\(\)\) at "
     r".*net.py:\d+ \(return y.sum\(\).item\(\)\)$"),
], ids=["none", "int", "float-in-tuple", "empty", "dict", "dict-in-tuple", "item"])
@pytest.mark.usefixtures("canary")  # nothing outside the build is touched (issue 28)
def test_forward_returning_no_tensors_is_one_line(tmp_path, returns, got):
    """forward() returning None, a number or a dict (Hugging Face's form) got an
    AttributeError in the lowering or in verify (issue 28 #7, #8)."""
    code = (f"\n\nclass Odd(TinyNet):\n    def forward(self, x):\n        y = super().forward(x)"
            f"\n        y *= 2\n        return {returns}\n")
    net = _write(tmp_path, "net.py", NET + code)
    with pytest.raises(StageError, match=r"^m/export: forward\(\) must return a tensor, or a "
                                         r"tuple or list of tensors; " + got):
        _export(net, tmp_path, attr="Odd", inputs=IMAGE)
    assert _no_outputs(tmp_path)


def test_nested_tuples_and_lists_of_outputs_are_flattened(tmp_path):
    """``return y, (a, [b])``: the later stages take (y, a, b), in that order."""
    from pipeline.programs import load_program

    code = ("\n\nclass Nested(TinyNet):\n    def forward(self, x):\n        y = super()."
            "forward(x)\n        return y, (y + 1, [torch.relu(y)])\n")
    net = _write(tmp_path, "net.py", NET + code)
    _export(net, tmp_path, attr="Nested", inputs=IMAGE)
    program = load_program(tmp_path / "out" / "model.pt2")
    x = torch_rand(1, 3, 8, 8)
    outputs = program.module()(x)
    assert isinstance(outputs, tuple) and len(outputs) == 3
    assert all(o.shape == (1, 4) for o in outputs)
    assert (outputs[1] - outputs[0]).sub(1).abs().max() < 1e-5


def torch_rand(*shape):
    import torch

    return torch.rand(*shape)


@pytest.mark.usefixtures("canary")  # nothing outside the build is touched (issue 28)
def test_wrong_input_shape_prints_no_torch_log_before_the_message(tmp_path):
    """torch's fake tensors log an E-level traceback of the shape mismatch; the stage's one
    line says it (issue 28 #12). In a fresh Python, as a build meets it: torch sets its log
    handlers up there for the first time."""
    net = _write(tmp_path, "net.py", NET)
    script = _write(tmp_path, "run.py", textwrap.dedent(f"""\
        from pathlib import Path
        from pipeline.errors import StageError
        from pipeline.stages.export import export
        try:
            export(Path({str(net)!r}), "IdsIntoLinear", Path({str(tmp_path / "out")!r}),
                   where="m/export", inputs=[{{"shape": [1, 13]}}], calibration_samples=2)
        except StageError as exc:
            print(exc)
        """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stderr == ""
    assert re.fullmatch(r"m/export: torch.export must capture the model; it raised "
                        r"RuntimeError: .* at .*net.py:\d+ \(return torch.relu_\(self.fc\(ids\)\)\)\n",
                        proc.stdout)


def test_error_in_a_helper_module_names_the_helper_line(tmp_path):
    _write(tmp_path, "blocks.py", "import torch\n\nWIDTH = int('eight')\n")
    net = _write(tmp_path, "net.py", "from blocks import WIDTH\n" + NET)
    with pytest.raises(StageError, match=r"it raised ValueError: invalid literal for int\(\) "
                                         r"with base 10: 'eight' at .*blocks.py:3 \(WIDTH ="):
        _export(net, tmp_path, inputs=IMAGE)


@pytest.mark.parametrize("attr, got", [
    ("weights", "OrderedDict"), ("model", "an instance of TinyNet; name its class instead"),
], ids=["state-dict", "instance"])
def test_model_source_that_is_not_a_class_or_factory(tmp_path, attr, got):
    net = _write(tmp_path, "net.py", NET + "\nmodel = TinyNet()\nweights = model.state_dict()\n")
    with pytest.raises(StageError, match=r"net.py:" + attr + r" must be an nn.Module class or a "
                                         r"function returning one; got " + re.escape(got) + "$"):
        _export(net, tmp_path, attr=attr, inputs=IMAGE)


# --- the stage time limit and Ctrl-C (pipeline/graph/timeout.py) --------------------------

@pytest.fixture
def limit(monkeypatch):
    def set_limit(seconds):
        monkeypatch.setattr(timeout, "_limit", seconds)
    return set_limit


def test_endless_loop_at_import_is_stopped_at_the_limit(tmp_path, limit):
    import torch  # noqa: F401  (imported before the clock starts, as doit's stages do)

    net = _write(tmp_path, "net.py", "import time\n\nwhile True:\n    time.sleep(0.01)\n" + NET)
    limit(0.5)
    handlers = signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGINT)
    started = time.monotonic()
    with pytest.raises(StageError, match=r"^m/export: the export stage must finish within the "
                       r"time limit of 0.5 s; it was still running at .*net.py:4 "
                       r"\(time.sleep\(0.01\)\) and was stopped\. If it only needs longer, "
                       r"raise the limit: timeout=SECONDS on the doit command line or "
                       r"ETHOSU_PIPELINE_TIMEOUT=SECONDS \(0: no limit\) "
                       r"\(see docs/commands\.md#timeout\)$"):
        timeout.call_with_limit("export", "m/export", lambda: _export(net, tmp_path,
                                                                      inputs=IMAGE))
    assert time.monotonic() - started < 5
    assert (signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGINT)) == handlers
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_tools_the_stage_started_are_stopped_with_it(tmp_path, limit):
    import torch  # noqa: F401

    net = _write(tmp_path, "net.py", NET + "\n\nimport subprocess\n\n\ndef build():\n"
                 "    subprocess.run(['sh', '-c', 'sleep 300 & sleep 300'])\n"
                 "    return TinyNet()\n")
    limit(0.5)
    before = timeout._descendants(os.getpid())
    with pytest.raises(StageError, match=r"it was still running at .*net.py:\d+ "
                                         r"\(subprocess.run"):
        timeout.call_with_limit("export", "m/export", lambda: _export(
            net, tmp_path, attr="build", inputs=IMAGE))
    assert timeout._descendants(os.getpid()) - before == set()


def test_a_limit_set_by_someone_else_is_kept(limit):
    limit(5)
    signal.setitimer(signal.ITIMER_REAL, 100)
    try:
        assert timeout.call_with_limit("export", "m", lambda: 42) == 42
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 95 < remaining <= 100
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


@pytest.fixture
def sigint(monkeypatch):
    """Set this process's SIGINT disposition for one test, restored afterwards.

    A shell that starts the suite in the background (CI runners, nohup, ``cmd &`` in a
    script) leaves SIGINT ignored, and Python then keeps it ignored: a test that presses
    Ctrl-C must say which disposition it means instead of inheriting the caller's.
    """
    before = signal.getsignal(signal.SIGINT)

    def set_disposition(handler):
        signal.signal(signal.SIGINT, handler)

    yield set_disposition
    signal.signal(signal.SIGINT, before)


def test_real_ctrl_c_stops_the_build_but_the_users_keyboard_interrupt_is_their_error(
        tmp_path, limit, sigint):
    limit(60)
    sigint(signal.default_int_handler)  # as in a terminal, whatever started the suite

    def pressed():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)

    with pytest.raises(KeyboardInterrupt, match=r"m/export: the build was interrupted "
                                                r"\(Ctrl-C\) while the export stage ran"):
        timeout.call_with_limit("export", "m/export", pressed)
    net = _write(tmp_path, "net.py", NET + "\n\ndef build():\n    raise KeyboardInterrupt\n")
    with pytest.raises(StageError, match=r"build\(\) must build an nn.Module; it raised "
                                         r"KeyboardInterrupt"):
        timeout.call_with_limit("export", "m/export", lambda: _export(
            net, tmp_path, attr="build", inputs=IMAGE))


def test_ctrl_c_ignored_by_whoever_started_the_build_stays_ignored(limit, sigint):
    """A build started with SIGINT ignored (a background job) is not made interruptible by
    the stage guard: the Ctrl-C is ignored, the stage finishes, the disposition is kept."""
    limit(60)
    sigint(signal.SIG_IGN)

    def pressed():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        return "finished"

    assert timeout.call_with_limit("export", "m/export", pressed) == "finished"
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


@pytest.mark.parametrize("value, seconds", [("90", 90.0), ("0.5", 0.5), ("0", None)])
def test_limit_values(value, seconds):
    assert timeout.resolve(value, {}) == seconds
    assert timeout.resolve(None, {timeout.ENV: value}) == seconds
    assert timeout.resolve(None, {}) == timeout.DEFAULT_SECONDS


@pytest.mark.parametrize("value", ["abc", "-1", "inf", "nan", ""])
def test_bad_limit_values(value):
    with pytest.raises(UserError, match=rf"^timeout={re.escape(value)}: timeout must be a "
                                        rf"number of seconds >= 0 \(0: no limit\); got"):
        timeout.resolve(value, {})


def test_bad_limit_in_the_environment_names_the_variable():
    with pytest.raises(UserError, match=r"^ETHOSU_PIPELINE_TIMEOUT=10min: "
                                        r"ETHOSU_PIPELINE_TIMEOUT must be a number of seconds"):
        timeout.resolve(None, {timeout.ENV: "10min"})


def test_stage_that_ignores_the_interruption_ends_the_process_with_one_line(tmp_path):
    script = _write(tmp_path, "stubborn.py", textwrap.dedent("""\
        from pipeline.graph import timeout

        timeout._limit, timeout._HARD_STOP = 0.3, 1.0


        def stubborn():
            while True:
                try:
                    sum(range(1000))
                except BaseException:
                    pass


        timeout.call_with_limit("export", "m/export", stubborn)
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1
    [line] = proc.stderr.splitlines()
    assert re.fullmatch(r"error: m/export: the export stage must finish within the time limit "
                        r"of 0.3 s; it was still running at .*stubborn.py:(7|8|9|10|11) .* 1 s "
                        r"later, ignoring the interruption, and the build was ended\. If it "
                        r"only needs longer, raise the limit: .*", line), line


# --- end to end: doit in a scratch project -------------------------------------------------

def _project(root: Path, models: dict[str, str], files: dict[str, str | bytes]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    yaml = "models:\n" + "".join(f"  {name}:\n" + textwrap.indent(body, "    ")
                                 for name, body in models.items())
    yaml += "targets:\n" + "".join(f"  {name}:\n    cpu: host\n    npu: null\n"
                                   f"    models: [{name}]\n" for name in models)
    (root / "targets.yaml").write_text(yaml)
    return root


def _doit(project: Path, *variables: str, flags: tuple[str, ...] = (),
          timeout_s: float = 300) -> subprocess.CompletedProcess:
    return doit(project, *flags, "build", *variables, ok=False, timeout=timeout_s)


def _store_entries(project: Path) -> list[Path]:
    """The stage outputs in the store; not the operator index (``pipeline/graph/code.py``),
    which the plan keeps there before any stage runs."""
    return sorted(path for path in (project / "store").glob("*/*/manifest.json")
                  if json.loads(path.read_text())["record"]["stage"] != "operator-index")


def _left_in_work(project: Path) -> list[Path]:
    """Files left in the stage work areas. (Not empty folders: torch.export pins
    TORCHINDUCTOR_CACHE_DIR to the first work area of the process and re-creates it, empty,
    on each later export.)"""
    return sorted(p for p in (project / "build" / ".work").rglob("*") if not p.is_dir())


BAD_FACTORY = NET + "\n\ndef broken_inputs():\n    raise ValueError('camera not connected')\n"


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    """One project, one model per case, built with ``doit --continue``: each case fails (or
    builds) on its own, and a case that escaped as SystemExit would stop all the others."""
    import torch

    root = tmp_path_factory.mktemp("fuzzed")
    calib = root / "calib"
    calib.mkdir()
    torch.save(torch.rand(1, 3, 8, 8), calib / "0.pt")
    image = "inputs: [{shape: [1, 3, 8, 8]}]\ncalibration: {samples: 2, seed: 1}\n"
    models = {
        "factory_raises": "source: models/net.py:TinyNet\ninputs: models/bad.py:broken_inputs\n",
        "junk_calibration": "source: models/net.py:TinyNet\ninputs: [{shape: [1, 3, 8, 8]}]\n"
                            "calibration: {folder: calib}\n",
        "exits": "source: models/exits.py:TinyNet\n" + image,
        "interrupts": "source: models/interrupts.py:TinyNet\n" + image,
        "tokens": "source: models/net.py:TokenNet\ninputs: models/net.py:token_ids\n"
                  "calibration: {samples: 2, seed: 1}\n",
        "edits_sys_path": "source: models/paths.py:TinyNet\n" + image,
    }
    files = {
        "models/net.py": NET, "models/bad.py": BAD_FACTORY,
        "models/exits.py": "raise SystemExit(3)\n" + NET,
        "models/interrupts.py": NET + "\nraise KeyboardInterrupt\n",
        "models/paths.py": "import sys\nsys.path.pop(0)\nsys.path.insert(0, '/opt/x')\n" + NET,
        "calib/1.pt": b"this is not a torch file",
    }
    project = _project(root, models, files)
    proc = _doit(project, flags=("--continue",))
    return project, proc


@pytest.mark.slow
def test_e2e_factory_that_raises(tmp_path):
    project = _project(tmp_path, {"m": "source: models/net.py:TinyNet\n"
                                       "inputs: models/bad.py:broken_inputs\n"},
                       {"models/net.py": NET, "models/bad.py": BAD_FACTORY})
    proc = _doit(project)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "Traceback" not in output
    assert re.search(r"m/export: broken_inputs\(\) must return the model's inputs; it raised "
                     r"ValueError: camera not connected at .*bad.py:\d+ \(raise ValueError",
                     output), output
    assert _left_in_work(project) == [] and _store_entries(project) == []
    assert not (project / "build" / "m").exists()


@pytest.mark.slow
def test_e2e_every_bad_case_fails_alone_with_its_message(fuzzed):
    project, proc = fuzzed
    output = proc.stdout + proc.stderr
    assert proc.returncode in (1, 2), output  # doit: a task failed / one's dependency did
    assert "Traceback" not in output
    calib = project / "calib" / "1.pt"
    for message in [
        r"factory_raises/export: broken_inputs\(\) must return the model's inputs; it raised "
        r"ValueError: camera not connected at .*bad.py:\d+ \(raise ValueError",
        rf"junk_calibration/export: calibration file {re.escape(str(calib))} must be a tensor "
        r"or a tuple of tensors saved with torch.save; torch.load could not read it",
        r"exits/export: importing .*exits.py must succeed; it raised SystemExit: 3 at "
        r".*exits.py:1 \(raise SystemExit\(3\)\)",
        r"interrupts/export: importing .*interrupts.py must succeed; it raised "
        r"KeyboardInterrupt at .*interrupts.py:\d+ \(raise KeyboardInterrupt\)",
    ]:
        assert re.search(message, output), message
    assert _left_in_work(project) == []
    for model in ("factory_raises", "junk_calibration", "exits", "interrupts"):
        # --continue: the target's folder holds only the report marking the failed model.
        folder = project / "build" / model
        assert not (folder / model).exists()
        failed = json.loads((folder / "report.json").read_text())["models"][model]["failed"]
        assert failed["task"] == f"export:{model}" and failed["error"], failed
        assert not list((project / "build" / ".stages" / "export" / model).glob("*"))


@pytest.mark.slow
def test_e2e_int64_ids_and_sys_path_edits_build(fuzzed):
    project, proc = fuzzed
    for model in ("tokens", "edits_sys_path"):
        assert (project / "build" / model / model / "model.tosa").is_file(), proc.stdout
        report = (project / "build" / model / model / "verify.json").read_text()
        assert '"passed": true' in report


@pytest.mark.slow
def test_e2e_time_limit_is_not_part_of_any_key(fuzzed):
    project, _ = fuzzed
    proc = _doit(project, "target=tokens", "timeout=900")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The page the fixture's build never wrote (other targets failed) is written now; no stage
    # and no target reruns.
    ran = re.findall(r"^\.  (\S+)", proc.stdout, re.MULTILINE)
    assert ran in ([], ["build:report.html"])


def test_e2e_config_bounds_name_file_and_line(tmp_path):
    project = _project(tmp_path, {"m": "source: models/net.py:TinyNet\n"
                                       "inputs: [{shape: [1, 3, 1000000, 1000000]}]\n"
                                       "calibration: {samples: 1000000000000000000}\n"},
                       {"models/net.py": NET})
    proc = _doit(project, timeout_s=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    yaml = project / "targets.yaml"
    assert f"{yaml}:4: models.m.inputs[0].shape: must have at most 2**28" in proc.stderr
    assert f"{yaml}:5: models.m.calibration.samples: must be <= 100000" in proc.stderr


def test_e2e_bad_timeout_value(tmp_path):
    project = _project(tmp_path, {"m": "source: models/net.py:TinyNet\n"
                                       "inputs: [{shape: [1, 3, 8, 8]}]\n"},
                       {"models/net.py": NET})
    proc = _doit(project, "timeout=ten", timeout_s=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("error: timeout=ten: timeout must be a number of seconds "
                                   ">= 0 (0: no limit); got 'ten' (see docs/commands.md#timeout)")


@pytest.mark.slow
@pytest.mark.parametrize("flags", [(), ("-n", "2")], ids=["one-process", "two-workers"])
def test_e2e_endless_loop_at_import_hits_the_time_limit(tmp_path, flags):
    project = _project(tmp_path, {"m": "source: models/net.py:TinyNet\n"
                                       "inputs: [{shape: [1, 3, 8, 8]}]\n"},
                       {"models/net.py": "n = 0\nwhile True:\n    n += 1\n" + NET})
    proc = _doit(project, "timeout=8", flags=flags, timeout_s=120)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "Traceback" not in output
    assert re.search(r"m/export: the export stage must finish within the time limit of 8 s; "
                     r"it was still running .*and was stopped\. If it only needs longer, "
                     r"raise the limit: timeout=SECONDS", output), output
    assert _left_in_work(project) == [] and _store_entries(project) == []


def test_e2e_ctrl_c_prints_one_line(tmp_path):
    project = _project(tmp_path, {"m": "source: models/net.py:TinyNet\n"
                                       "inputs: [{shape: [1, 3, 8, 8]}]\n"},
                       {"models/net.py": "import pathlib, time\n"
                                         f"pathlib.Path({str(tmp_path / 'asleep')!r}).touch()\n"
                                         "time.sleep(300)\n" + NET})
    argv = doit_argv(project, "build")
    # A session of its own, so the Ctrl-C (SIGINT to the foreground group) reaches only it.
    # SIGINT restored to its default in the child: a shell that started this test suite in
    # the background (CI runners, nohup) leaves it ignored, and Python then never sees Ctrl-C.
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline().startswith(".  export:m")
        # Ctrl-C once the model file runs (a loaded machine may take seconds to get there).
        deadline = time.monotonic() + 120
        while not (tmp_path / "asleep").exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert "Traceback" not in out + err
    assert err.strip().splitlines()[-1] == ("error: m/export: the build was interrupted "
                                            "(Ctrl-C) while the export stage ran")
    assert _left_in_work(project) == [] and _store_entries(project) == []


@pytest.mark.usefixtures("canary")  # nothing outside the build is touched (issue 28)
def test_e2e_os_exit_0_at_import_fails_the_build_in_one_line(tmp_path):
    """issue 28 #9: `doit build` exited 0, built nothing and printed nothing."""
    project = _project(tmp_path, {"m": "source: models/net.py:TinyNet\n"
                                       "inputs: [{shape: [1, 3, 8, 8]}]\n"},
                       {"models/net.py": "import os\n\nos._exit(0)\n" + NET})
    proc = _doit(project)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "Traceback" not in output
    assert re.search(r"^m/export: importing .*net.py must succeed; it called os._exit\(0\) at "
                     r".*net.py:3 \(os._exit\(0\)\)\. Code that exits", output, re.MULTILINE)
    assert not (project / "build" / "m").exists()
