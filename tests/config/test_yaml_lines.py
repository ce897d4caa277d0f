"""The line-keeping YAML reader (pipeline/config/yaml_lines.py)."""

from __future__ import annotations

import time

import pytest

from pipeline.config.yaml_lines import MAX_ALIAS_VALUES, MAX_DEPTH, YamlSyntaxError, parse_yaml

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


def _nested(depth: int, flow: bool) -> str:
    if flow:
        return "a: " + "[" * depth + "]" * depth + "\n"
    return "".join(f"{'  ' * level}k{level}:\n" for level in range(depth)) + "  " * depth + "x\n"


@pytest.mark.parametrize("flow", [True, False], ids=["flow-lists", "block-mappings"])
def test_nesting_is_bounded_with_the_line(flow):
    parse_yaml(_nested(MAX_DEPTH - 1, flow))  # the root mapping is one level
    with pytest.raises(YamlSyntaxError) as caught:
        parse_yaml(_nested(500, flow))  # was a RecursionError inside PyYAML's composer
    line = 1 if flow else MAX_DEPTH + 1
    assert (caught.value.line, caught.value.message) == (
        line, "lists and mappings must be nested at most 100 levels deep; got level 101 here")


def test_nesting_through_aliases_is_bounded_at_the_alias():
    text = "a0: &a0 " + "[" * 90 + "]" * 90 + "\n" + "".join(
        f"a{n}: &a{n} " + "[" * 90 + f"*a{n - 1}" + "]" * 90 + "\n" for n in range(1, 8))
    with pytest.raises(YamlSyntaxError) as caught:
        parse_yaml(text)
    assert caught.value.line == 2
    assert caught.value.where == ("a1", *[0] * 90)
    assert caught.value.message.endswith("got level 101 here, through aliases")


def _laughs(levels: int) -> str:
    """Ten aliases of ten aliases ...: 10**levels values from a few lines."""
    text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
    for n in range(1, levels + 1):
        text += f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]\n"
    return text


def _merges(levels: int) -> str:
    """The same with merge keys, which PyYAML copies pair by pair."""
    text = "m0: &m0 {" + ", ".join(f"k{i}: {i}" for i in range(10)) + "}\n"
    for n in range(1, levels + 1):
        text += f"m{n}: &m{n} {{<<: [" + ", ".join([f"*m{n - 1}"] * 10) + "], own: 1}\n"
    return text


@pytest.mark.parametrize(("text", "line", "where", "added", "this"), [
    pytest.param(_laughs(7), 4, ("a3", 7), 10108, 1111, id="billion-laughs"),
    pytest.param(_merges(8), 4, ("m3",), 22470, 20230, id="merge-keys"),
])
def test_alias_expansion_is_bounded_before_it_happens(text, line, where, added, this):
    start = time.perf_counter()
    with pytest.raises(YamlSyntaxError) as caught:
        parse_yaml(text)  # 7 levels took over 60 s and 3 GB before the bound
    assert time.perf_counter() - start < 1.0
    assert (caught.value.line, caught.value.where) == (line, where)
    assert caught.value.message == (
        f"aliases and merge keys must add at most {MAX_ALIAS_VALUES} values in all; "
        f"got {added} with the {this} this one adds. Share settings with defaults: and "
        "extends: instead")


def test_aliases_within_the_bound_expand():
    doc = parse_yaml(_laughs(2) + _merges(1))
    assert doc.data["a2"][9][9] == ["x"] * 10
    assert doc.data["m1"] == {**{f"k{i}": i for i in range(10)}, "own": 1}
    assert doc.lines[("a2", 9)] == (3, 3)  # the alias's own line, not its anchor's (line 2)


def test_alias_value_of_a_key_has_the_alias_line():
    doc = parse_yaml("base: &b [1, 2]\nuse:\n  -\n    *b\nkey:\n  *b\n")
    assert doc.lines[("use", 0)] == (4, 4)
    assert doc.lines[("key",)] == (5, 6)


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("a: " + "1" * 5000 + "\n", "must be an integer of at most 4300 digits; got one "
                 "of 5000 digits", id="int-over-python-digit-limit"),
    pytest.param("a: 2001-02-30\n", "must be a valid timestamp; got '2001-02-30' (day is out of "
                 "range for month)", id="date-that-does-not-exist"),
])
def test_scalars_python_cannot_hold_are_issues(text, message):
    doc = parse_yaml(text)
    assert doc.data == {"a": None}
    assert doc.issues == [(1, ("a",), message)]
