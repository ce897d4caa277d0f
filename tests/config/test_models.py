"""The models: block (pipeline/config/models.py and the path types of paths.py).

Each case is the body of model ``m``, starting at line 3 of the file.
"""

from __future__ import annotations

import textwrap

import pytest

from pipeline.config import Calibration, InputSpec, SourceRef


@pytest.fixture
def model_yaml():
    def _model_yaml(body: str) -> str:
        return ("models:\n  m:\n" + textwrap.indent(textwrap.dedent(body), "    ")
                + "targets:\n  t: {cpu: host, npu: null, models: [m]}\n")
    return _model_yaml


ADD = "source: models/add.py:AddModel\n"


def test_listed_inputs_and_defaults(load, model_yaml, project):
    model = load(model_yaml(ADD + "inputs:\n  - {name: x, shape: [1, 8], dtype: int8, "
                            "range: [-5, 5]}\n  - {shape: [2]}\n")).models["m"]
    assert model.source == SourceRef(path=project / "models" / "add.py", attr="AddModel")
    assert (model.source_path, model.source_attr) == (project / "models" / "add.py", "AddModel")
    assert model.input_specs == (
        InputSpec(name="x", shape=(1, 8), dtype="int8", range=(-5.0, 5.0)),
        InputSpec(shape=(2,)),
    )
    assert model.input_specs[1].range == (-1.0, 1.0)
    assert model.input_factory is None
    assert model.seed == 0
    assert model.calibration == Calibration(samples=16, seed=1)
    assert model.calibration.kind == "random"


def test_input_factory_and_calibration_folder(load, model_yaml, project):
    model = load(model_yaml("source: models/cnn.py:SmallCNN\ninputs: models/cnn.py:example_inputs\n"
                            "seed: 5\ncalibration: {folder: calib}\n")).models["m"]
    assert model.input_factory == SourceRef(path=project / "models" / "cnn.py",
                                            attr="example_inputs")
    assert model.input_specs is None
    assert model.seed == 5
    assert model.calibration == Calibration(folder=project / "calib")
    assert (model.calibration.kind, model.calibration.samples) == ("folder", None)


def test_dotted_source_name(load, model_yaml):
    model = load(model_yaml("source: models/cnn.py:Outer.make\ninputs: [{shape: [1]}]\n"))
    assert model.models["m"].source_attr == "Outer.make"


def test_calibration_observer(load, model_yaml):
    model = load(model_yaml(ADD + "inputs: [{shape: [1]}]\ncalibration: {observer: histogram}\n"))
    assert model.models["m"].calibration == Calibration(samples=16, seed=1, observer="histogram")


def test_calibration_samples_only(load, model_yaml):
    model = load(model_yaml(ADD + "inputs: [{shape: [1]}]\ncalibration: {samples: 4}\n"))
    assert model.models["m"].calibration == Calibration(samples=4, seed=1)


INVALID = [
    pytest.param("source: models/add.py\ninputs: [{shape: [1]}]\n", [
        ("targets.yaml:3: models.m.source: must be <file>.py:<name>, e.g. models/add.py:AddModel; "
        "got 'models/add.py'")], id="source-without-name"),
    pytest.param("source: models/add.py:1Add\ninputs: [{shape: [1]}]\n", [
        ("targets.yaml:3: models.m.source: must be <file>.py:<name>, e.g. models/add.py:AddModel; "
        "got 'models/add.py:1Add'")], id="source-bad-name"),
    pytest.param("source: 12\ninputs: [{shape: [1]}]\n", [
        ("targets.yaml:3: models.m.source: must be <file>.py:<name>, e.g. models/add.py:AddModel; "
        "got 12")], id="source-not-a-string"),
    pytest.param("inputs: [{shape: [1]}]\n", [
        "targets.yaml:2: models.m.source: must be set; got nothing"], id="source-missing"),
    pytest.param(ADD, ["targets.yaml:2: models.m.inputs: must be set; got nothing"],
                 id="inputs-missing"),
    pytest.param(ADD + "inputs: []\n", [
        "targets.yaml:4: models.m.inputs: must have at least 1 item; got []"], id="inputs-empty"),
    pytest.param(ADD + "inputs: 3\n", [
        "targets.yaml:4: models.m.inputs: must be a list; got 3"], id="inputs-number"),
    pytest.param(ADD + "inputs: models/add.py\n", [
        ("targets.yaml:4: models.m.inputs: must be <file>.py:<name>, e.g. models/add.py:AddModel; "
        "got 'models/add.py'")], id="inputs-factory-shape"),
    pytest.param(ADD + "inputs:\n  - {name: x}\n", [
        "targets.yaml:5: models.m.inputs[0].shape: must be set; got nothing"], id="shape-missing"),
    pytest.param(ADD + "inputs: [[1, 8]]\n", [
        "targets.yaml:4: models.m.inputs[0]: must be a mapping; got [1, 8]"], id="input-not-map"),
    pytest.param(ADD + "inputs:\n  - {shape: []}\n", [
        "targets.yaml:5: models.m.inputs[0].shape: must have at least 1 item; got []"],
        id="rank-0"),
    pytest.param(ADD + "inputs:\n  - {shape: [1, 1, 1, 1, 1, 1, 1]}\n", [
        ("targets.yaml:5: models.m.inputs[0].shape: must have at most 6 items; "
        "got [1, 1, 1, 1, 1, 1, 1]")], id="rank-7"),
    pytest.param(ADD + "inputs:\n  - shape: [1, -2]\n", [
        "targets.yaml:5: models.m.inputs[0].shape[1]: must be > 0; got -2"], id="negative-dim"),
    pytest.param(ADD + "inputs:\n  - shape: [1, 2.5]\n", [
        "targets.yaml:5: models.m.inputs[0].shape[1]: must be an integer; got 2.5"],
        id="float-dim"),
    pytest.param(ADD + "inputs:\n  - {shape: [1], dtype: float16}\n", [
        ("targets.yaml:5: models.m.inputs[0].dtype: must be one of float32, int8, int16, int32, "
        "int64, bool; got 'float16'")], id="dtype"),
    pytest.param(ADD + "inputs:\n  - {shape: [1], range: [1, 1]}\n", [
        "targets.yaml:5: models.m.inputs[0].range: must be [lo, hi] with lo < hi; got [1.0, 1.0]"],
        id="empty-range"),
    pytest.param(ADD + "inputs:\n  - {shape: [1], range: [0]}\n", [
        "targets.yaml:5: models.m.inputs[0].range: must be [lo, hi]; got [0]"], id="range-length"),
    pytest.param(ADD + "inputs:\n  - {shape: [1], dtype: int8, range: [-200, 0]}\n", [
        ("targets.yaml:5: models.m.inputs[0].range: must lie within -128..127 for int8; "
        "got [-200.0, 0.0]")], id="range-outside-int8"),
    pytest.param(ADD + "inputs:\n  - {shape: [1], dtype: bool, range: [0, 2]}\n", [
        ("targets.yaml:5: models.m.inputs[0].range: must lie within 0..1 for bool; "
        "got [0.0, 2.0]")], id="range-outside-bool"),
    pytest.param(ADD + "inputs:\n  - {name: x, shape: [1]}\n  - {name: x, shape: [1]}\n", [
        ("targets.yaml:6: models.m.inputs[1].name: must be unique among the inputs; got 'x' again "
        "(first at inputs[0])")], id="duplicate-input-name"),
    pytest.param(ADD + "inputs:\n  - {shape: [1], shap: [1]}\n", [
        "targets.yaml:5: models.m.inputs[0].shap: unknown field; did you mean 'shape'?"],
        id="did-you-mean-in-list"),
    pytest.param(ADD + "inputs: [{shape: [1]}]\nseed: -1\n", [
        "targets.yaml:5: models.m.seed: must be >= 0; got -1"], id="seed"),
    pytest.param(ADD + "inputs: [{shape: [1]}]\ncalibration: {samples: 0}\n", [
        "targets.yaml:5: models.m.calibration.samples: must be >= 1; got 0"], id="samples"),
    pytest.param(ADD + "inputs: [{shape: [1]}]\ncalibration: {folder: calib, samples: 8}\n", [
        ("targets.yaml:5: models.m.calibration.samples: must be omitted when folder is set "
        "(calibration comes from the folder or from random samples, not both); got 8")],
        id="folder-and-samples"),
    pytest.param(ADD + "inputs: [{shape: [1]}]\ncalibration: {folder: calib, seed: 3}\n", [
        ("targets.yaml:5: models.m.calibration.seed: must be omitted when folder is set "
        "(calibration comes from the folder or from random samples, not both); got 3")],
        id="folder-and-seed"),
    pytest.param(ADD + "inputs: [{shape: [1]}]\ncalibration: {observer: kl}\n", [
        "targets.yaml:5: models.m.calibration.observer: must be one of mse, minmax, histogram; "
        "got 'kl'"], id="observer"),
    pytest.param(ADD + "inputs: [{shape: [1]}]\ncalibration: 16\n", [
        "targets.yaml:5: models.m.calibration: must be a mapping; got 16"], id="calibration-int"),
]


@pytest.mark.parametrize(("body", "expected"), INVALID)
def test_invalid_model(issues, model_yaml, body, expected):
    assert issues(model_yaml(body)) == expected


def test_model_must_be_a_mapping(issues):
    assert issues("models:\n  m: models/add.py:AddModel\ntargets:\n"
                  "  t: {cpu: host, npu: null, models: [m]}\n"
                  ) == ["targets.yaml:2: models.m: must be a mapping; got 'models/add.py:AddModel'"]


def test_missing_files_name_the_resolved_path(issues, model_yaml, project):
    text = model_yaml("source: models/nope.py:Net\ninputs: gen/inputs.py:make\n"
                      "calibration: {folder: data}\n")
    assert issues(text) == [
        (f"targets.yaml:3: models.m.source: must name an existing file; got "
        f"'models/nope.py:Net' ({project / 'models' / 'nope.py'} does not exist)"),
        (f"targets.yaml:4: models.m.inputs: must name an existing file; got 'gen/inputs.py:make' "
        f"({project / 'gen' / 'inputs.py'} does not exist)"),
        (f"targets.yaml:5: models.m.calibration.folder: must be an existing folder; got 'data' "
        f"({project / 'data'} is not one)"),
    ]


@pytest.mark.parametrize(("body", "expected"), [
    pytest.param(ADD + "inputs: [{shape: [1], range: [.nan, 1]}]\n", [
        "targets.yaml:4: models.m.inputs[0].range[0]: must be a finite number; got .nan"],
        id="nan"),
    pytest.param(ADD + "inputs: [{shape: [1], range: [-.inf, .inf]}]\n", [
        "targets.yaml:4: models.m.inputs[0].range[0]: must be a finite number; got -.inf",
        "targets.yaml:4: models.m.inputs[0].range[1]: must be a finite number; got .inf"],
        id="inf"),
    pytest.param(ADD + "inputs: [{shape: [1], range: [0, 1.0e+999]}]\n", [
        "targets.yaml:4: models.m.inputs[0].range[1]: must be a finite number; got .inf"],
        id="overflow-to-inf"),
])
def test_floats_must_be_finite(issues, model_yaml, body, expected):
    assert issues(model_yaml(body)) == expected


@pytest.mark.parametrize(("body", "expected"), [
    pytest.param('source: "models/add.py:AddModel\\n"\ninputs: [{shape: [1]}]\n', [
        ("targets.yaml:3: models.m.source: must be <file>.py:<name>, e.g. models/add.py:AddModel; "
         "got 'models/add.py:AddModel\\n'")], id="source"),
    pytest.param(ADD + 'inputs: [{shape: [1], dtype: "int8\\n"}]\n', [
        ("targets.yaml:4: models.m.inputs[0].dtype: must be one of float32, int8, int16, int32, "
         "int64, bool; got 'int8\\n'")], id="dtype"),
])
def test_values_ending_in_a_newline_are_refused(issues, model_yaml, body, expected):
    assert issues(model_yaml(body)) == expected


@pytest.mark.parametrize(("body", "line", "field", "value", "reason"), [
    pytest.param(f"source: models/{'a' * 300}.py:Net\ninputs: [{{shape: [1]}}]\n", 3, "source",
                 f"models/{'a' * 300}.py:Net", "a name in it has 303 bytes", id="source"),
    pytest.param(ADD + f"inputs: [{{shape: [1]}}]\ncalibration: {{folder: {'c' * 256}}}\n", 5,
                 "calibration.folder", "c" * 256, "a name in it has 256 bytes", id="calibration"),
    pytest.param(ADD + f"inputs: {'d/' * 2100}x.py:make\n", 4, "inputs",
                 f"{'d/' * 2100}x.py:make", "it has ", id="path-over-4096-bytes"),
    pytest.param(ADD + 'inputs: [{shape: [1]}]\ncalibration: {folder: "c\\0d"}\n', 5,
                 "calibration.folder", "c\0d", "embedded null byte", id="nul-byte"),
])
def test_paths_the_system_refuses_are_issues(issues, model_yaml, body, line, field, value,
                                             reason):
    found = issues(model_yaml(body))  # was OSError: [Errno 36] File name too long
    assert len(found) == 1
    head = f"targets.yaml:{line}: models.m.{field}: must be a path the system can look up; got "
    assert found[0].startswith(head + repr(value)[:50])
    assert reason in found[0] and "\n" not in found[0] and "\0" not in found[0]
    assert len(found[0]) < 400, "long values are cut"
