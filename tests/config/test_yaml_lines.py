"""The line-keeping YAML reader (pipeline/config/yaml_lines.py)."""

from __future__ import annotations

import pytest

from pipeline.config.yaml_lines import YamlSyntaxError, parse_yaml

TEXT = """\
# comment
a:
  b: 1
  c:
    - x
    - {d: 2}
e: [3,
    4]
"""


def test_data_and_lines():
    doc = parse_yaml(TEXT)
    assert doc.data == {"a": {"b": 1, "c": ["x", {"d": 2}]}, "e": [3, 4]}
    assert doc.lines[("a",)] == (2, 3)  # key line, value (block mapping) line
    assert doc.lines[("a", "b")] == (3, 3)
    assert doc.lines[("a", "c", 1)] == (6, 6)
    assert doc.lines[("a", "c", 1, "d")] == (6, 6)
    assert doc.lines[("e", 1)] == (8, 8)
    assert doc.issues == []


def test_keys_are_kept_as_written():
    assert parse_yaml("1: a\nyes: b\nnull: c\n").data == {"1": "a", "yes": "b", "null": "c"}


def test_merge_keys_point_at_the_anchor():
    doc = parse_yaml("base: &b\n  x: 1\n  y: 2\nuse:\n  <<: *b\n  y: 3\n")
    assert doc.data["use"] == {"x": 1, "y": 3}
    assert doc.lines[("use", "x")] == (2, 2)
    assert doc.lines[("use", "y")] == (6, 6)
    assert doc.issues == []


@pytest.mark.parametrize(("text", "issues"), [
    ("a: 1\nb: 2\na: 3\n", [(3, ("a",), "duplicate key; first written at line 1")]),
    ("? [a]\n: 1\n", [(1, (), "keys must be names; got a list")]),
    ("a: &x [*x]\n", [(1, ("a", 0), "must not contain itself; got a recursive alias")]),
])
def test_problems_that_are_not_syntax_errors(text, issues):
    assert parse_yaml(text).issues == issues


@pytest.mark.parametrize(("text", "line", "message"), [
    ("a: [1\n", 2, ("invalid YAML: expected ',' or ']', but got '<stream end>' "
     "(while parsing a flow sequence at line 1)")),
    ("a: b: c\n", 1, "invalid YAML: mapping values are not allowed here"),
    ("a: 1\n---\nb: 2\n", 2, ("invalid YAML: but found another document "
     "(expected a single document in the stream at line 1)")),
    ("a: !!python/object:os.system x\n", 1, ("invalid YAML: could not determine a constructor "
     "for the tag 'tag:yaml.org,2002:python/object:os.system'")),
    ("a: 1\nb: \x07\n", 2, ("invalid YAML: special characters are not allowed; "
     "got character #x0007")),
])
def test_syntax_errors(text, line, message):
    with pytest.raises(YamlSyntaxError) as caught:
        parse_yaml(text)
    assert (caught.value.line, caught.value.message) == (line, message)


def test_empty_document():
    assert parse_yaml("# nothing\n").data is None
