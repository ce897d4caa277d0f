"""docs/operators.md is generated from the operator registry and the measured cycles
(``pipeline/graph/operator_docs.py``): it must be current."""

import pytest

pytestmark = pytest.mark.needs_torch


def test_operators_page_is_current():
    from pipeline.graph import operator_docs

    current = operator_docs.PAGE.read_text() if operator_docs.PAGE.is_file() else ""
    assert current == operator_docs.page(), (
        f"docs/operators.md is stale: run `{operator_docs.COMMAND}`")


def test_the_page_names_every_operator_file_and_says_what_is_measured():
    from pipeline.graph import operator_docs
    from pipeline.tosa import registry

    text = operator_docs.page()
    for module in registry.operators():
        assert f"\n### {module.rsplit('.', 1)[1]}\n" in text
    assert "(m)" in text and "(d)" in text  # measured and declared cells, told apart
    assert "| [op_conv2d](#op_conv2d) |" in text


def test_check_names_the_command_when_the_page_is_stale(tmp_path, monkeypatch, capsys):
    from pipeline.graph import operator_docs

    stale = tmp_path / "operators.md"
    stale.write_text("# Operators\n")
    monkeypatch.setattr(operator_docs, "PAGE", stale)
    monkeypatch.setattr(operator_docs, "REPO", tmp_path)
    assert operator_docs.main(["--check"]) == 1
    assert operator_docs.COMMAND in capsys.readouterr().err
    assert operator_docs.main(["--write"]) == 0 and operator_docs.main(["--check"]) == 0
