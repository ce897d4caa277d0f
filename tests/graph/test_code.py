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
from tests.e2e.runner import doit

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
def test_the_operator_index_moves_with_targets_not_with_bodies(tree):
    """Which file lowers which target is in the keys of the stages that read the registry:
    an edit of an operator's body leaves it, a new target changes it."""
    before = code.operator_index(tree)
    assert before["aten.conv2d.default"] == "op_conv2d"
    conv = tree / "pipeline" / "tosa" / "ops" / "op_conv2d.py"
    with _Edited(conv):
        assert code.operator_index(tree) == before
    text = conv.read_text()
    assert '@lowers("aten.conv2d.default"' in text
    try:
        conv.write_text(text.replace('@lowers("aten.conv2d.default"',
                                     '@lowers("aten.conv2d.default", "aten.conv_tbc.default"'))
        after = code.operator_index(tree)
    finally:
        conv.write_text(text)
    # The new target is lowered and quantized (op_conv2d's rule covers its targets) there.
    assert after == {**before, "aten.conv_tbc.default": "op_conv2d",
                     "quant aten.conv_tbc.default": "op_conv2d"}


@pytest.mark.needs_torch
def test_the_operator_index_moves_with_quantization_and_npu_rules(tree):
    """Each facet an operator file declares is an entry of the index: its targets' quantization
    rules and the NPU rules of the TOSA operators it owns. Moving the RESIZE rules from
    op_upsample.py to op_upsample_bilinear.py changes the index (and so the keys of the
    quantize, lower, vela and mixed stages), though no target moved."""
    before = code.operator_index(tree)
    assert before["quant aten.conv2d.default"] == "op_conv2d"
    assert before["quant aten.relu.default"] == "op_clamp"
    assert before["npu u55 RESIZE"] == before["npu u65 RESIZE"] == "op_upsample"
    assert "npu u85 RESIZE" not in before  # Ethos-U85 takes every integer RESIZE
    ops = tree / "pipeline" / "tosa" / "ops"
    nearest, bilinear = ops / "op_upsample.py", ops / "op_upsample_bilinear.py"
    texts = nearest.read_text(), bilinear.read_text()
    rules = '    npu={U55_U65: {"RESIZE": (u55_resize_factor, u55_resize_batch)}},\n'
    assert rules in texts[0] and "    quant=SHARED,\n" in texts[1]
    try:
        nearest.write_text(texts[0].replace(rules, ""))
        bilinear.write_text(texts[1].replace("    quant=SHARED,\n", "    quant=SHARED,\n" + rules)
                            .replace("import resize_inputs", "import resize_inputs, "
                                     "u55_resize_batch, u55_resize_factor")
                            .replace("import Operator, lowers", "import U55_U65, Operator, lowers"))
        after = code.operator_index(tree)
    finally:
        nearest.write_text(texts[0])
        bilinear.write_text(texts[1])
    moved = {k for k in before if before[k] != after.get(k)}
    assert moved == {"npu u55 RESIZE", "npu u65 RESIZE"}
    assert after["npu u55 RESIZE"] == "op_upsample_bilinear" and after.keys() == before.keys()


def test_stages_that_read_the_registry_depend_on_every_operator_file():
    """doit re-runs them when any operator changes (the key then decides whether anything is
    computed again): the stages that lower or quantize, and those that check the NPU rules
    operator files declare (vela, mixed); the stages that do neither do not."""
    ops = {ROOT / "pipeline" / "tosa" / "ops" / "op_conv2d.py"}
    for name in ("export", "quantize", "lower", "vela", "mixed"):
        assert code.uses_registry(STAGES[name]) and ops <= set(code.code_files(STAGES[name]))
    for name in ("package", "runtime", "vgf"):
        assert not code.uses_registry(STAGES[name])
        assert not ops & set(code.code_files(STAGES[name]))


_PROBE = """
import importlib, json, pickle, sys
from pathlib import Path
stage, args = pickle.loads(Path(sys.argv[1]).read_bytes())
importlib.import_module(stage).run(*args, "probe")
print(json.dumps(sorted(m.__file__ for n, m in list(sys.modules.items())
                        if n.split(".")[0] == "pipeline" and getattr(m, "__file__", None))))
"""


PROBED = ["tosa-ref", "u55-baremetal", "a53-cpu", "vgf-int8"]


def _stages_of_add(plan, target: str) -> list:
    """The add model's invocations of ``target`` that run project code of their own."""
    return [inv for inv in plan.invocations.values()
            if target in plan.users[inv.task] and STAGES[inv.stage].packages
            and inv.name.split("/")[0] == "add"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One doit run of the add model's stages of every probed target (and what they read),
    from targets.yaml: the probes need each stage's inputs, not the targets' other models."""
    from pipeline.config import load_config
    from pipeline.graph.plan import make_plan

    root = tmp_path_factory.mktemp("built")
    plan = make_plan(load_config(ROOT / "targets.yaml"), root / "build")
    tasks = sorted({inv.task for target in PROBED for inv in _stages_of_add(plan, target)})
    doit(ROOT, *tasks, f"build={root / 'build'}", store=root / "store")
    return plan, {}  # the plan, and what each probed invocation imported, by task


def _probe(inv, folder: Path) -> set[Path]:
    """The project's modules that running ``inv`` alone in a fresh Python imported."""
    import json
    import pickle
    import subprocess
    import sys

    work = folder / inv.stage
    work.mkdir(exist_ok=True)
    out = {role: work / path.name for role, path in inv.outputs.items()}
    args = (inv.inputs, out, inv.options, inv.params)  # plain data: no plan class loaded
    (folder / "inv.pickle").write_bytes(pickle.dumps((STAGES[inv.stage].module, args)))
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(folder / "inv.pickle")],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    return {Path(f).resolve() for f in json.loads(proc.stdout.splitlines()[-1])}


@pytest.mark.slow
@pytest.mark.needs_torch
@pytest.mark.needs_vela
@pytest.mark.parametrize("target", PROBED)
def test_every_module_a_stage_runs_is_in_its_code(target, built, tmp_path):
    """Each stage of a real build, run alone in a fresh Python: every module of this project
    it imported is among the files its key covers (``code_files``: the import closure, and
    the operator files when it reads the registry). A module outside them would be code that
    changes outputs without changing the key. (The targets share the add model's export,
    quantize, lower and verify: each invocation is probed once.)"""
    plan, probed = built
    mine = _stages_of_add(plan, target)
    assert {inv.stage for inv in mine} >= {"export", "quantize", "lower", "verify"}
    for inv in mine:
        if inv.task not in probed:
            probed[inv.task] = _probe(inv, tmp_path)
        assert probed[inv.task] - set(code.code_files(STAGES[inv.stage])) == set(), inv.task
