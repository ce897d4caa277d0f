from pathlib import Path

from pipeline.cache.key import options_digest, stage_key, tool_versions, tree_digest


def _key(tmp_path: Path, content: bytes = b"abc", options=None, tools=None, code="c1"):
    f = tmp_path / "in.bin"
    f.write_bytes(content)
    return stage_key("vela", code, {"tosa": f}, options or {"a": 1},
                     tools or {"ethos-u-vela": "5.2.0"})[0]


def test_key_is_stable_for_equal_inputs(tmp_path):
    assert _key(tmp_path) == _key(tmp_path)


def test_key_changes_with_content_options_code_and_tools(tmp_path):
    base = _key(tmp_path)
    assert _key(tmp_path, content=b"abd") != base
    assert _key(tmp_path, options={"a": 2}) != base
    assert _key(tmp_path, code="c2") != base
    assert _key(tmp_path, tools={"ethos-u-vela": "5.3.0"}) != base


def test_key_ignores_where_the_input_lives(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    assert _key(a) == _key(b)


def test_options_digest_ignores_key_order():
    assert options_digest({"a": 1, "b": [1, 2]}) == options_digest({"b": [1, 2], "a": 1})
    assert options_digest({"a": 1}) != options_digest({"a": 2})


def test_tree_digest_depends_on_names_and_content(tmp_path):
    (tmp_path / "x.py").write_text("1")
    (tmp_path / "y.py").write_text("2")
    files = list(tmp_path.glob("*.py"))
    first = tree_digest(files, root=tmp_path)
    (tmp_path / "y.py").write_text("3")
    assert tree_digest(files, root=tmp_path) != first


def test_tool_versions_reads_installed_metadata():
    versions = tool_versions(("doit", "surely-not-installed-package"))
    assert versions["doit"] == "0.37.0"
    assert versions["surely-not-installed-package"] == "missing"
    assert versions["python"].startswith("3.")
