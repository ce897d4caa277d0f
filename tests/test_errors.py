"""The user-error family (pipeline/errors.py): one grammar, and a pointer to the docs page that
explains a kind of mistake (that the pages and sections exist: tests/test_documentation.py)."""

from __future__ import annotations

import pytest

from pipeline.errors import ConfigError, see


def test_see_points_at_a_docs_page():
    assert see("docs/caching.md#remote-store") == "(see docs/caching.md#remote-store)"


def test_see_refuses_a_page_outside_docs():
    with pytest.raises(ValueError, match=r"^page must be a path under docs/; got 'README.md'$"):
        see("README.md")


def test_config_error_lists_every_problem_then_the_reference():
    error = ConfigError(["t.yaml:3: targets.a.cpu: must be one of ...; got 'x'",
                         "t.yaml:9: models: must define at least one model; got none"])
    assert str(error).splitlines() == [
        "2 problems in the configuration:",
        "t.yaml:3: targets.a.cpu: must be one of ...; got 'x'",
        "t.yaml:9: models: must define at least one model; got none",
        "(see docs/targets.md)",
    ]
    assert error.issues[-1].startswith("t.yaml:9")  # the pointer is not an issue
