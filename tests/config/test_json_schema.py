"""The JSON Schema of targets.yaml (pipeline/config/json_schema.py)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from pipeline.config.json_schema import targets_schema

REPO = Path(__file__).parents[2]
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def validator():
    schema = targets_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_committed_schema_is_up_to_date():
    committed = json.loads((REPO / "targets.schema.json").read_text())
    regenerate = "python -m pipeline.config schema -o targets.schema.json"
    assert committed == targets_schema(), f"run: {regenerate}"


def test_fixture_file_is_valid(validator):
    data = yaml.safe_load((FIXTURES / "targets.yaml").read_text())
    assert list(validator.iter_errors(data)) == []


M = "models: {m: {source: a.py:M, inputs: [{shape: [1]}]}}\n"


@pytest.mark.parametrize(("text", "path"), [
    (M + "targets: {t: {cpu: cortex-m99}}\n", ["targets", "t", "cpu"]),
    (M + "targets: {t: {npu: {config: ethos-u55-128, sytem_config: x}}}\n",
     ["targets", "t", "npu"]),
    ("models: {m: {source: add.py, inputs: [{shape: [1]}]}}\ntargets: {t: {}}\n",
     ["models", "m", "source"]),
    (M + "targets: {t: {tosa: TOSA1.0}}\n", ["targets", "t", "tosa"]),
    (M + "targets: {t: {models: []}}\n", ["targets", "t", "models"]),
    (M + "defaults: {extends: t}\ntargets: {t: {}}\n", ["defaults"]),
    (M + "targets: {'a b': {}}\n", ["targets"]),
])
def test_schema_flags_mistakes(validator, text, path):
    errors = list(validator.iter_errors(yaml.safe_load(text)))
    assert [list(e.absolute_path) for e in errors] == [path]


def test_schema_regexes_are_ecma_compatible():
    assert "(?P<" not in json.dumps(targets_schema())


def test_field_descriptions_come_from_docstrings():
    defs = targets_schema()["$defs"]
    assert defs["Target"]["properties"]["cpu"]["description"] == "the application CPU."
    assert "Default: TOSA-1.0+INT+int16" in defs["Target"]["properties"]["tosa"]["description"]
    assert "default" not in defs["NpuConfig"]["properties"]["cop_format"]  # derived from cpu
    assert defs["InputSpec"]["properties"]["shape"]["maxItems"] == 6
