"""Translating pydantic errors into the error grammar (pipeline/config/issues.py)."""

from __future__ import annotations

import pytest

from pipeline.config.issues import dotted, message_for


@pytest.mark.parametrize(("error", "message"), [
    ({"type": "literal_error", "input": "x", "ctx": {"expected": "'a', 'b' or 'c'"}},
     "must be one of a, b, c; got 'x'"),
    ({"type": "literal_error", "input": 3, "ctx": {"expected": "'a'"}}, "must be a; got 3"),
    ({"type": "int_type", "input": "7"}, "must be an integer; got '7'"),
    ({"type": "float_type", "input": True}, "must be a number; got true"),
    ({"type": "string_type", "input": None}, "must be a string; got null"),
    ({"type": "bool_type", "input": "yes"}, "must be true or false; got 'yes'"),
    ({"type": "model_type", "input": [1]}, "must be a mapping; got [1]"),
    ({"type": "tuple_type", "input": {"a": 1}}, "must be a list; got {a: 1}"),
    ({"type": "greater_than", "input": 0, "ctx": {"gt": 0}}, "must be > 0; got 0"),
    ({"type": "greater_than_equal", "input": -1, "ctx": {"ge": 0}}, "must be >= 0; got -1"),
    ({"type": "less_than", "input": 9, "ctx": {"lt": 8}}, "must be < 8; got 9"),
    ({"type": "too_short", "input": [], "ctx": {"min_length": 1, "field_type": "Tuple",
                                                 "actual_length": 0}},
     "must have at least 1 item; got []"),
    ({"type": "too_long", "input": [1, 2, 3], "ctx": {"max_length": 2, "field_type": "Tuple",
                                                      "actual_length": 3}},
     "must have at most 2 items; got [1, 2, 3]"),
    ({"type": "config_rule", "input": None, "ctx": {"message": "must be x; got y"}},
     "must be x; got y"),
    ({"type": "something_new", "msg": "Input is odd", "input": 1},
     "must be valid (input is odd); got 1"),
])
def test_message_for(error, message):
    assert message_for(error) == message


def test_dotted():
    assert dotted(("models", "add", "inputs", 0, "shape", 1)) == "models.add.inputs[0].shape[1]"
    assert dotted(()) == ""
    assert dotted(("targets", "t\n", "np\ru")) == "targets.'t\\n'.'np\\ru'"  # one line


def test_message_for_a_non_finite_float():
    error = {"type": "finite_number", "input": float("nan")}
    assert message_for(error) == "must be a finite number; got .nan"
