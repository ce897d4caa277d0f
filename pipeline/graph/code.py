"""The code parts of a stage's key, computed from its declaration (``pipeline/stages/declare.py``).

What a stage's key covers beyond its input files and options:

- **its code**: every file of this project that its function's module imports, at any depth
  (``imports.project_closure``), never a hand-kept list;
- **the operator index** when that code includes the operator registry: which operator file
  declares what - lowers which FX target (it decides what the normalisation keeps and which
  visitor runs), quantizes which target by its rule, owns the NPU rules of which TOSA
  operator (``registry.index``); editing an operator's body leaves it alone, adding or moving
  a target or a rule does not;
- **the operators it used**: the operator files (with what they import) whose declarations
  the run used - visitors dispatched to, quantization rules applied, NPU rules checked - as
  a second-level key (``graph/loaded.py``), so editing an operator a model does not use moves
  none of its keys;
- **its tools**: the versions of the Python packages it names, and the fingerprints of the
  external tools its ``tools`` function returns (a compiler, QEMU, a Vulkan driver).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pipeline.cache.key import tree_digest
from pipeline.errors import UserError
from pipeline.files import write_atomic
from pipeline.graph.imports import project_closure
from pipeline.stages.declare import Stage

PIPELINE_DIR = Path(__file__).resolve().parents[1]
REPO_DIR = PIPELINE_DIR.parent
REGISTRY = "pipeline.tosa.registry"
OPS_PACKAGE = "pipeline.tosa.ops"
INDEX_CACHE = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / \
    "ethosu-pipeline" / "operator-index"


# ---- code: the stage's import closure ----------------------------------------------------


def code_files(stage: Stage, root: Path = REPO_DIR) -> tuple[Path, ...]:
    """The project files a stage's outputs depend on as code: its module's import closure,
    plus every operator file's own closure when that includes the registry (the operators
    it may dispatch to at run time). doit re-runs the stage's tasks when one changes; the
    key then decides whether anything is recomputed (``code_key``)."""
    files = set(project_closure(stage.module, root))
    if uses_registry(stage, root):
        files.update(operator_files(root))
    return tuple(sorted(files))


def uses_registry(stage: Stage, root: Path = REPO_DIR) -> bool:
    return _module_file(root, REGISTRY) in project_closure(stage.module, root)


def _module_file(root: Path, module: str) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def operator_modules(root: Path = REPO_DIR) -> list[str]:
    """Every ``pipeline.tosa.ops.op_*`` module (the registry imports them all)."""
    folder = root.joinpath(*OPS_PACKAGE.split("."))
    return [f"{OPS_PACKAGE}.{p.stem}" for p in sorted(folder.glob("op_*.py"))]


def operator_files(root: Path = REPO_DIR) -> set[Path]:
    """The operator files and everything they import."""
    files: set[Path] = set()
    for module in operator_modules(root):
        files.update(project_closure(module, root))
    return files


def code_key(stage: Stage, root: Path = REPO_DIR) -> str:
    """The digest of the stage's own import closure (its key's ``code`` part)."""
    return tree_digest(project_closure(stage.module, root), root)


# ---- the operator index: which file lowers which target ----------------------------------


def operator_index(root: Path = REPO_DIR) -> dict[str, str]:
    """What each operator file declares -> the file (``op_add``), as the registry has it:
    ``<FX target>`` (its lowering), ``quant <FX target>``, ``npu <family> <TOSA operator>``.

    Reading it means importing every operator (torch, ~2 s), so it is kept in a file named by
    the digest of the operator files and what they import (``INDEX_CACHE``; outside the
    store, whose entries are stage outputs only): after an edit it is read once more, and an
    edit that moves no declaration leaves every key as it was."""
    digest = tree_digest(operator_files(root), root)
    cached = INDEX_CACHE / f"{digest}.json"
    try:
        return json.loads(cached.read_text())
    except (OSError, ValueError):
        pass  # not read yet (or damaged): read it from the registry
    index = _read_index(root)
    try:
        write_atomic(cached, json.dumps(index, sort_keys=True).encode())
    except (OSError, UserError):
        pass  # best effort (a full disk, a link there): the index is read again next time
    return index


def _read_index(root: Path) -> dict[str, str]:
    if root != REPO_DIR:  # another checkout: its registry in a process of its own
        import subprocess
        import sys

        code = "import json; from pipeline.tosa import registry; print(json.dumps(registry.index()))"
        out = subprocess.run([sys.executable, "-c", code], cwd=root, check=True,
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})
        return json.loads(out.stdout)
    from pipeline.tosa import registry

    return registry.index()


def used_operator_files(modules: set[str], root: Path = REPO_DIR) -> list[Path]:
    """The files behind the operator modules a run used (each with what it imports)."""
    files: set[Path] = set()
    for module in modules:
        if module.startswith(OPS_PACKAGE + "."):
            files.update(project_closure(module, root))
    return sorted(files)
