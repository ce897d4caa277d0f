"""Fuzzing load_config (pipeline/config/load.py): any targets.yaml either loads or raises a
ConfigError (a UserError) whose every problem is one printable line ``<file>:<line>: ...``;
never another exception, a hang, or a load slower than 2 s.

Two generators, both starting from the fixture file plus an ``extends``, an anchor and an
alias: grammar-aware (the parsed file with values, keys, types and nesting depths replaced,
keys added or dropped, long extends chains and alias bombs added, dumped back to YAML) and
byte-level (bytes flipped, inserted, deleted, repeated, and YAML tokens spliced in).

CI runs a fixed, small sample (a few seconds). For a longer, random run set
``ETHOSU_CONFIG_FUZZ_EXAMPLES``, e.g.
``ETHOSU_CONFIG_FUZZ_EXAMPLES=5000 .venv/bin/pytest -n 0 tests/config/test_fuzz_config.py``.
"""

from __future__ import annotations

import contextlib
import copy
import faulthandler
import os
import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.config import load_config
from pipeline.errors import UserError

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = int(os.environ.get("ETHOSU_CONFIG_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=EXAMPLES or 25,
    # per example: slower is a failure (a hang guard with room for a loaded CI machine;
    # a valid file loads in ~15 ms, the bombs this guards against took seconds to minutes)
    deadline=timedelta(seconds=10),
    derandomize=not EXAMPLES,  # CI: the same examples every run
    database=None,  # no example database: a failure prints how to reproduce it
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
HANG_SECONDS = 20  # a hang fails the test instead of stalling the run

BASE_TEXT = (FIXTURES / "targets.yaml").read_text().replace(
    "npu: {config: ethos-u55-128}", "npu: &u55 {config: ethos-u55-128}") + """\
  child:
    extends: u55-baremetal
    build_type: Debug
    npu: *u55
"""
BASE_DATA = yaml.safe_load(BASE_TEXT)


def _laughs(width: int, depth: int) -> str:
    """``width`` aliases of ``width`` aliases ..., ``depth`` levels: width**depth values."""
    text = "laugh0: &laugh0 [" + ", ".join(["lol"] * width) + "]\n"
    for level in range(1, depth + 1):
        text += f"laugh{level}: &laugh{level} [" + ", ".join([f"*laugh{level - 1}"] * width) + "]\n"
    return text + f"laugh: &laugh [*laugh{depth}]\nshared: &shared {{config: ethos-u55-128}}\n"


BOMBS = st.sampled_from([(3, 3), (10, 6), (2, 24), (10, 7), (40, 4), (1, 1)])

# Values that broke the loader once, or are on the edge of a rule. The PH_ names are put in
# as text after dumping (a dumper cannot write them, or would quote them).
TEXT_PLACEHOLDERS = {
    "PH_DEEP_800": "[" * 800 + "]" * 800,  # over the recursion limit hypothesis raises to 2000
    "PH_DEEP_99": "[" * 99 + "]" * 99,
    "PH_BIGINT": "9" * 5000,
    "PH_HEXINT": "0x" + "f" * 5000,
    "PH_ALIAS": "*shared",
    "PH_LAUGHS": "*laugh",
}
# Strings from a fixed list of characters: st.text() builds a Unicode table first (seconds).
CHARS = st.sampled_from(list("az09 -_.:/~#&*!|>'\"[]{},") + list("\t\n\r\x00\x07\x1b\x7f\x85")
                        + list("é\u00a0\u2028\ufeff\U0001f600\u4e2d\ud7ff"))
TEXT = st.lists(CHARS, max_size=12).map("".join)
ODD_VALUES = st.sampled_from([
    *TEXT_PLACEHOLDERS, "", "t\n", "x" * 300, "a" * 300 + ".py:Net", "d/" * 2100 + "x.py:Net",
    "models/add.py:AddModel\n", "models/add.py", "/usr", "/", "~", "~nobody/x", "a\0b", "..",
    "TOSA-1.0+INT\n", "ethos-u55-128\n", "int8\n", "cortex-m55", "ethos-u85-256",
    "u55-baremetal", "child", 2**62, 2**31, 2**30, -(2**63), 16, 48, 0, -1, float("nan"),
    float("inf"), float("-inf"), 1e308,
])
VALUES = st.one_of(
    ODD_VALUES, st.none(), st.booleans(), st.integers(), st.floats(), TEXT,
    st.lists(st.integers(-3, 3), max_size=4),
    st.dictionaries(TEXT, st.integers(0, 3), max_size=3),
)
KEYS = st.one_of(
    st.sampled_from(["npu", "extends", "cpu", "models", "<<", "np\nu", "\x1b", "k" * 300,
                     "defaults", "targets", "config", "ethosu_sdk", "range", "t\n"]),
    TEXT,
)
TOKENS = [
    b"&a ", b"*a", b"*u55", b"<<: ", b"<<: *u55\n", b"[", b"]", b"{", b"}", b"\xff", b"\xc3",
    b"\t", b": ", b"- ", b"\n", b"  ", b"extends: child\n", b"npu: null", b".nan", b"-.inf",
    b"9" * 5000, b'"\\n"', b"\x00", b"? ", b"---\n", b"%YAML 1.1\n", b"!!binary ",
    b"!!python/object:os.system ", b"2001-02-30", b"'", b'"', b"#", b"|\n", b">-\n",
]
# Byte runs that once crashed or stalled the loader (or would without its limits).
HAZARDS = [
    b"[" * 800, b"{a: " * 800, b"\n" + _laughs(10, 7).encode(), b"\nx: [" + b"*laugh, " * 10,
    b"9" * 5000, b"\xff\xfe", b"\n  t\\n: {}\n",
]


def _paths(data, path=()):
    yield path
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _paths(value, (*path, index))


def _parent(data, path):
    for part in path[:-1]:
        data = data[part]
    return data


@st.composite
def grammar_mutants(draw) -> bytes:
    """The fixture's data with a few values, keys, types or depths changed, as YAML."""
    data, prelude = copy.deepcopy(BASE_DATA), draw(st.booleans())
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(list(_paths(data))[1:]))
        parent, last = _parent(data, path), path[-1]
        # Hazards first: a small sample favours the first choices.
        action = draw(st.sampled_from(["deep", "alias", "chain", "odd", "value", "rename",
                                       "drop", "add"]))
        if action in ("value", "odd", "deep", "alias"):
            parent[last] = draw({
                "value": VALUES, "odd": ODD_VALUES,
                "deep": st.sampled_from(["PH_DEEP_800", "PH_DEEP_99"]),
                "alias": st.sampled_from(["PH_ALIAS", "PH_LAUGHS"]),
            }[action])
            prelude = prelude or parent[last] in ("PH_ALIAS", "PH_LAUGHS")
        elif action == "rename" and isinstance(parent, dict):
            parent[draw(KEYS)] = parent.pop(last)
        elif action == "drop":
            del parent[last]
        elif action == "add" and isinstance(parent, dict) and isinstance(parent[last], dict):
            parent[last][draw(KEYS)] = draw(VALUES)
        elif action == "chain" and isinstance(data.get("targets"), dict):
            count = draw(st.integers(2, 2000))
            data["targets"].update({f"c{i}": {"extends": f"c{i + 1}"} for i in range(count)})
            data["targets"][f"c{count}"] = {"extends": draw(st.sampled_from(["child", "c0"]))}
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=draw(st.booleans()),
                          default_flow_style=draw(st.sampled_from([False, None, True])),
                          width=draw(st.sampled_from([80, 10**6])))
    if prelude:
        text = _laughs(*draw(BOMBS)) + text
    for name, replacement in TEXT_PLACEHOLDERS.items():
        text = text.replace(name, replacement)
    return text.encode("utf-8", "surrogatepass")


@st.composite
def byte_mutants(draw) -> bytes:
    """The fixture's bytes with a few flipped, inserted, deleted, repeated or replaced."""
    data = bytearray(BASE_TEXT.encode())
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data)))
        end = min(len(data), at + draw(st.integers(0, 64)))
        action = draw(st.sampled_from(["hazard", "token", "flip", "insert", "delete", "repeat"]))
        if action == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "insert":
            data[at:at] = draw(st.binary(max_size=16))
        elif action == "delete":
            del data[at:end]
        elif action == "repeat":
            data[at:at] = bytes(data[at:end]) * draw(st.integers(1, 60))
        elif action in ("hazard", "token"):
            data[at:at] = draw(st.sampled_from(HAZARDS if action == "hazard" else TOKENS))
    return bytes(data)


@pytest.fixture(scope="module")
def targets_file(tmp_path_factory) -> Path:
    project = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(FIXTURES / "models", project / "models")
    return project / "targets.yaml"


@contextlib.contextmanager
def _hang_guard(seconds: int):
    """A load still running after ``seconds`` ends the process with every thread's
    traceback: a hang then fails the run instead of stalling it. (An exception from a
    signal handler would not do: it may land in a gc callback, where it is only printed.)"""
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def _loads_or_explains(path: Path, content: bytes) -> None:
    path.write_bytes(content)
    with _hang_guard(HANG_SECONDS):
        try:
            load_config(path)
            return
        except UserError as exc:  # anything else escapes and fails the test
            issues = getattr(exc, "issues", [str(exc)])
    last_line = content.count(b"\n") + 1
    assert issues
    for issue in issues:
        match = re.match(rf"{re.escape(str(path))}:(\d+): ", issue)
        assert match, f"no file:line in {issue!r}"
        assert 1 <= int(match[1]) <= last_line, issue
        assert issue.isprintable(), f"one problem, one line, no control characters: {issue!r}"


def test_the_base_file_loads(targets_file):
    targets_file.write_text(BASE_TEXT)
    assert load_config(targets_file).targets["child"].npu.config == "ethos-u55-128"


@FUZZ
@given(content=grammar_mutants())
def test_grammar_mutants_load_or_explain(targets_file, content):
    _loads_or_explains(targets_file, content)


@FUZZ
@given(content=byte_mutants())
def test_byte_mutants_load_or_explain(targets_file, content):
    _loads_or_explains(targets_file, content)
