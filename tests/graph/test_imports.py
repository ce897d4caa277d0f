"""A model file's local imports are inputs of its export (issue: editing a helper re-exports)."""

from pathlib import Path

from pipeline.cache.key import stage_key
from pipeline.config.load import load_config
from pipeline.graph.imports import local_imports
from pipeline.graph.plan import make_plan


def _project(tmp_path: Path) -> Path:
    (tmp_path / "blocks").mkdir()
    (tmp_path / "blocks" / "__init__.py").write_text("from .conv import ConvBlock\n")
    (tmp_path / "blocks" / "conv.py").write_text("import torch\nfrom . import util\nCONV = 1\n")
    (tmp_path / "blocks" / "util.py").write_text("X = 2\n")
    (tmp_path / "helper.py").write_text("import math\nWIDTH = 8\n")
    (tmp_path / "net.py").write_text(
        "import torch\nfrom torch import nn\nimport helper\nfrom blocks import ConvBlock\n"
        "class Net(nn.Module):\n    pass\n")
    (tmp_path / "targets.yaml").write_text(
        "models:\n  net: {source: net.py:Net, inputs: [{shape: [1, 4]}]}\n"
        "targets:\n  t: {cpu: host, npu: null, models: [net]}\n")
    return tmp_path


def test_local_imports_follow_helpers_and_packages_not_libraries(tmp_path):
    root = _project(tmp_path)
    found = [p.relative_to(root.resolve()).as_posix() for p in local_imports(root / "net.py")]
    assert found == ["blocks/__init__.py", "blocks/conv.py", "blocks/util.py", "helper.py"]


def _export_key(root: Path) -> str:
    config = load_config(root / "targets.yaml")
    inv = next(i for i in make_plan(config, root / "build").invocations.values()
               if i.stage == "export")
    return stage_key("export", "code", inv.inputs, inv.options, {})[0]


def test_editing_an_imported_helper_changes_the_export_key(tmp_path):
    root = _project(tmp_path)
    before = _export_key(root)
    assert _export_key(root) == before
    (root / "blocks" / "util.py").write_text("X = 3\n")
    assert _export_key(root) != before
