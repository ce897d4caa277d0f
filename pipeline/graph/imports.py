"""The local Python files a model file imports, found without running it.

A model file's helpers (``from blocks import ResBlock`` beside it) change what the export
stage produces, so they are inputs of its key and of doit's up-to-date check. The files are
found by reading ``import`` statements (``ast``), following them through files that resolve
beside the importing one; site-packages and the standard library are covered by the tool
versions in the key instead. Imports made at run time (``importlib``) are not seen.
"""

from __future__ import annotations

import ast
from pathlib import Path


def _module_file(folder: Path, dotted: str) -> Path | None:
    parts = dotted.split(".")
    for candidate in (folder.joinpath(*parts).with_suffix(".py"),
                      folder.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            return candidate
    return None


def _imported_names(tree: ast.AST) -> list[tuple[str, int]]:
    """(module, relative level) of every import statement."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            found.append((base, node.level))
            # ``from pkg import module`` imports pkg/module.py too
            found += [(f"{base}.{a.name}" if base else a.name, node.level) for a in node.names]
    return found


def local_imports(path: Path, roots: tuple[Path, ...] = ()) -> list[Path]:
    """Every local file ``path`` imports, directly or through other local files (sorted).

    Args:
        path: the model (or inputs factory) file.
        roots: more folders that count as local, besides each file's own folder (the
            model's folder is on ``sys.path`` while it is imported).
    """
    path = Path(path).resolve()
    top = path.parent
    seen: set[Path] = set()
    pending = [path]
    while pending:
        current = pending.pop()
        try:
            tree = ast.parse(current.read_bytes(), filename=str(current))
        except (OSError, SyntaxError, ValueError):
            continue  # the export stage reports a file that does not import
        for name, level in _imported_names(tree):
            if level:
                folders = [current.parents[level - 1]]
            else:
                folders = [top, *roots]
            for folder in folders:
                found = _module_file(folder, name) if name else None
                if found is not None and found.resolve() not in seen and found.resolve() != path:
                    seen.add(found.resolve())
                    pending.append(found.resolve())
                    break
    return sorted(seen)
