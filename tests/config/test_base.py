"""Message helpers shared by the config models (pipeline/config/base.py)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from pipeline.config.base import os_problem, plain, show


@pytest.mark.parametrize(("value", "shown"), [
    pytest.param(float("nan"), ".nan", id="nan"),
    pytest.param(float("-inf"), "-.inf", id="minus-inf"),
    pytest.param(1.5, "1.5", id="float"),
    pytest.param(10**5000, "an integer of about 5001 digits", id="int-past-str-limit"),
    pytest.param("x" * 300, "'" + "x" * 99 + "… (302 characters)", id="long-string-cut"),
    pytest.param({"a\nb": [1, None]}, "{'a\\nb': [1, null]}", id="key-escaped"),
])
def test_show(value, shown):
    assert show(value) == shown


@pytest.mark.parametrize(("text", "shown"), [
    ("npu", "npu"), ("np\nu", "'np\\nu'"), ("a\x1bb", "'a\\x1bb'"), ("\u2028", "'\\u2028'"),
])
def test_plain_escapes_only_what_would_break_a_line(text, shown):
    assert plain(text) == shown


def test_os_problem_says_which_limit():
    long_name = Path("/tmp") / ("a" * 300)
    too_long = OSError(errno.ENAMETOOLONG, "File name too long")
    assert os_problem(too_long, long_name) == (
        "File name too long: a name in it has 300 bytes, over the system's 255")
    assert os_problem(too_long, Path("/tmp/" + "d/" * 2100)).startswith(
        "File name too long: it has 4204 bytes, over the system's 4096")
    assert os_problem(ValueError("embedded null byte"), Path("a")) == "embedded null byte"
