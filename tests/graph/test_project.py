import pytest

from pipeline.errors import UserError
from pipeline.graph.project import select_targets
from pipeline.cache.store import store_root


def test_all_targets_when_none_requested():
    assert select_targets(["a", "b"], None, "t.yaml") == ["a", "b"]


def test_comma_separated_selection_keeps_order():
    assert select_targets(["a", "b", "c"], "c, a", "t.yaml") == ["c", "a"]


def test_unknown_target_names_the_choices_and_a_close_match():
    with pytest.raises(UserError, match=r"target=u85-linx: target must be one of u85-linux, "
                                        r"tosa-ref \(from t.yaml\); got 'u85-linx'. Did you mean "
                                        r"'u85-linux'\?"):
        select_targets(["u85-linux", "tosa-ref"], "u85-linx", "t.yaml")


def test_store_location_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("ETHOSU_PIPELINE_STORE", str(tmp_path / "env"))
    assert store_root(str(tmp_path / "var")) == tmp_path / "var"
    assert store_root(None) == tmp_path / "env"
    monkeypatch.delenv("ETHOSU_PIPELINE_STORE")
    assert store_root(None).parts[-2:] == ("ethosu-pipeline", "store")
