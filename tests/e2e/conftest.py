"""End-to-end tests: ``doit build`` of a project in a temporary folder, with the real tools.

Each module builds its project once (a module-scoped fixture) and its tests read what the
build wrote; builds run through ``tests/e2e/runner.py``. Every test here is ``slow`` (out of
the quick tier, handed to the workers first), whether or not its module says so.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e.runner import ROOT


def pytest_itemcollected(item):
    item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="module")
def new_project(tmp_path_factory):
    """``new_project(name, targets)``: a fresh project folder holding ``targets`` as its
    targets.yaml and a copy of the checkout's example ``models/``."""

    def make(name: str, targets: str) -> Path:
        root = tmp_path_factory.mktemp(name)
        shutil.copytree(ROOT / "models", root / "models")
        (root / "targets.yaml").write_text(targets)
        return root

    return make
