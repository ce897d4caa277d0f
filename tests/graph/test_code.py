"""A stage's key covers the code it runs, computed from its import closure
(``pipeline/graph/code.py``): editing a module the stage imports changes its key, editing one it
does not import leaves the key alone, and an operator a model does not use is in none of its
keys. Every edit here is made in a copy of ``pipeline/``, never in the checkout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline.graph import code, loaded
from pipeline.graph.imports import project_closure
from pipeline.graph.stages import STAGES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A copy of the project's ``pipeline/`` to edit."""
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(ROOT / "pipeline", root / "pipeline",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


class _Edited:
    """Append a comment to a file for the duration of a ``with``: its bytes change, not its
    imports."""

    def __init__(self, path: Path):
        self.path, self.text = path, path.read_text()

    def __enter__(self):
        self.path.write_text(self.text + "\n# edited\n")

    def __exit__(self, *exc):
        self.path.write_text(self.text)


def _module_file(tree: Path, module: str) -> Path:
    path = tree.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


@pytest.mark.parametrize("name", list(STAGES))
def test_editing_a_module_the_stage_imports_changes_its_key_and_no_other_does(name, tree):
    stage = STAGES[name]
    closure = set(project_closure(stage.module, tree))
    before = code.code_key(stage, tree)
    deepest = max(closure - {_module_file(tree, stage.module)},
                  key=lambda p: (len(p.parts), p.name))  # imported through others
    for inside in (_module_file(tree, stage.module), deepest):
        with _Edited(inside):
            assert code.code_key(stage, tree) != before, inside
    outside = sorted(set((tree / "pipeline").rglob("*.py")) - closure)
    assert outside, f"{name} imports every module of the project"
    for path in outside[:: max(1, len(outside) // 8)]:  # a spread of the rest
        with _Edited(path):
            assert code.code_key(stage, tree) == before, path
    assert code.code_key(stage, tree) == before


def test_observers_are_in_the_quantize_key_and_not_in_the_export_key(tree):
    """Before the keys came from imports, editing quant/observers.py re-exported every model."""
    observers = tree / "pipeline" / "quant" / "observers.py"
    export, quantize = code.code_key(STAGES["export"], tree), code.code_key(STAGES["quantize"], tree)
    with _Edited(observers):
        assert code.code_key(STAGES["export"], tree) == export
        assert code.code_key(STAGES["quantize"], tree) != quantize


def test_an_operator_the_model_does_not_use_is_in_none_of_its_keys(tree):
    """Lowering ``x + y`` used op_add.py: its second-level key covers that file (and what it
    imports), not op_conv2d.py; and no stage imports op_conv2d.py itself."""
    used = code.used_operator_files({"pipeline.tosa.ops.op_add"}, tree)
    ops = tree / "pipeline" / "tosa" / "ops"
    assert ops / "op_add.py" in used and ops / "op_conv2d.py" not in used
    keys = {name: code.code_key(stage, tree) for name, stage in STAGES.items()}

    def second_level():
        return loaded.loaded_key("first", {}, used, None)[0]

    before = second_level()
    with _Edited(ops / "op_conv2d.py"):
        assert second_level() == before
        assert {name: code.code_key(stage, tree) for name, stage in STAGES.items()} == keys
    with _Edited(ops / "op_add.py"):
        assert second_level() != before


@pytest.mark.needs_torch
def test_the_operator_index_moves_with_targets_not_with_bodies(tree, tmp_path):
    """Which file lowers which target is in the keys of the stages that read the registry:
    an edit of an operator's body leaves it, a new target changes it."""
    from pipeline.cache.store import Store

    store = Store(tmp_path / "store")
    before = code.operator_index(store, tree)
    assert before["aten.conv2d.default"] == "op_conv2d"
    conv = tree / "pipeline" / "tosa" / "ops" / "op_conv2d.py"
    with _Edited(conv):
        assert code.operator_index(store, tree) == before
    text = conv.read_text()
    assert '@lowers("aten.conv2d.default"' in text
    try:
        conv.write_text(text.replace('@lowers("aten.conv2d.default"',
                                     '@lowers("aten.conv2d.default", "aten.conv_tbc.default"'))
        after = code.operator_index(store, tree)
    finally:
        conv.write_text(text)
    assert after == {**before, "aten.conv_tbc.default": "op_conv2d"}


def test_stages_that_read_the_registry_depend_on_every_operator_file():
    """doit re-runs them when any operator changes (the key then decides whether anything is
    computed again); the stages that never lower do not."""
    ops = {ROOT / "pipeline" / "tosa" / "ops" / "op_conv2d.py"}
    for name in ("export", "quantize", "lower"):
        assert code.uses_registry(STAGES[name]) and ops <= set(code.code_files(STAGES[name]))
    for name in ("vela", "package", "runtime", "vgf"):
        assert not code.uses_registry(STAGES[name])
        assert not ops & set(code.code_files(STAGES[name]))
