"""Helpers for the config tests: write a targets.yaml next to the fixture models and load it."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from pipeline.config import ProjectConfig, load_config
from pipeline.errors import ConfigError

FIXTURES = Path(__file__).parent / "fixtures"

# Lines 1-8 of every generated file; a target body given to `target_yaml` starts at line 9.
HEADER = """\
models:
  add:
    source: models/add.py:AddModel
    inputs:
      - {shape: [1, 8, 8, 16]}
targets:
  t:
    models: [add]
"""


# After the body, so body lines keep their numbers; a body may set npu itself.
FOOTER = "defaults:\n  npu: null\n"


@pytest.fixture
def target_yaml():
    """``target_yaml(body)``: a file with model ``add`` and target ``t`` with fields ``body``
    (``npu`` is required: it is null unless ``body`` sets it)."""

    def _target_yaml(body: str) -> str:
        return HEADER + textwrap.indent(textwrap.dedent(body), "    ").rstrip("\n") + "\n" + FOOTER

    return _target_yaml


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder (the working directory) with the fixture models in it."""
    shutil.copytree(FIXTURES / "models", tmp_path / "models")
    (tmp_path / "calib").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def load(project: Path):
    """``load(text) -> ProjectConfig``: writes ``targets.yaml`` in the project and loads it."""

    def _load(text: str) -> ProjectConfig:
        (project / "targets.yaml").write_text(textwrap.dedent(text))
        return load_config(Path("targets.yaml"))

    return _load


@pytest.fixture
def issues(load):
    """``issues(text) -> list[str]``: the problems ``load`` reports for ``text``."""

    def _issues(text: str) -> list[str]:
        with pytest.raises(ConfigError) as caught:
            load(text)
        return caught.value.issues

    return _issues
