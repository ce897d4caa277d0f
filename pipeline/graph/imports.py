"""The local Python files a model file imports, found without running it.

A model file's helpers (``from blocks import ResBlock`` beside it) change what the export
stage produces, so they are inputs of its key and of doit's up-to-date check. The files are
found by reading ``import`` statements (``ast``), following them through files that resolve
beside the importing one; site-packages and the standard library are covered by the tool
versions in the key instead. Imports made at run time (``importlib``) are not seen.
"""

from __future__ import annotations

import ast
import functools
import re
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


def _module_path(root: Path, dotted: str) -> Path | None:
    """The file of project module ``dotted`` under ``root`` (a package's ``__init__.py``)."""
    return _module_file(root, dotted)


_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(?P<base>\.*[\w.]*)[ \t]+import[ \t]+(?P<names>\([^)]*\)|[^\n#;]*)"
    r"|import[ \t]+(?P<modules>[\w., \t]+))", re.MULTILINE)


@functools.cache
def _project_imports(path: Path, stamp: tuple[int, int], package: str) -> tuple[str, ...]:
    """Dotted names a project file imports (``stamp``: its time and size, so an edit is seen).

    A line scan, not ``ast``: a stage's closure is read on every build that plans, and walking
    a syntax tree per file costs ~20 ms. A docstring line that reads like an import adds a
    file to the closure at worst (a key too wide, never too narrow)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ()
    names = []
    for match in _IMPORT.finditer(text):
        if match["modules"] is not None:
            names += [m.split()[0] for m in match["modules"].split(",") if m.strip()]
            continue
        base = match["base"]
        level = len(base) - len(base.lstrip("."))
        base = base.lstrip(".")
        if level:  # relative to the file's package
            parts = package.split(".")
            base = ".".join([*parts[: len(parts) - level + 1], *([base] if base else [])])
        names.append(base)
        for item in match["names"].strip("()").split(","):
            item = item.split("#")[0].split()
            if item and item[0] != "*":
                names.append(f"{base}.{item[0]}")
    return tuple(names)


# (module, root) -> (its closure, the time and size of each of its files): a build asks for
# the operator files' closures once per stage task (48 modules each); their stamps show an
# edit since, which computes the closure again.
_CLOSURES: dict[tuple[str, Path], tuple[tuple[Path, ...], tuple | None]] = {}


def _stamps(files: tuple[Path, ...]) -> tuple | None:
    stamps = []
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            return None  # deleted since: never equal to a recorded stamp
        stamps.append((stat.st_mtime_ns, stat.st_size))
    return tuple(stamps)


def project_closure(module: str, root: Path) -> tuple[Path, ...]:
    """Every file of this project that importing ``module`` runs, sorted: its own file, the
    ``__init__.py`` of each package above it, and the same for every project module it
    imports at any depth - imports inside functions included (a stage imports its heavy
    modules when it runs). ``root`` is the folder holding the top package (``pipeline/``).

    Imports made at run time by name (``importlib``) are not seen; the operator registry's
    are covered by the stage keys' registry index and operator record (``graph/code.py``).
    Kept per process while none of its files changes (time and size, as ``_project_imports``).
    """
    known = _CLOSURES.get((module, root))
    if known is not None and known[1] is not None and _stamps(known[0]) == known[1]:
        return known[0]
    files = _closure(module, root)
    _CLOSURES[module, root] = (files, _stamps(files))
    return files


def _closure(module: str, root: Path) -> tuple[Path, ...]:
    top = module.split(".")[0]
    seen: set[str] = set()
    files: set[Path] = set()
    pending = [module]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_path(root, name)
        if path is None:
            continue  # a name inside a module (``from pkg.mod import func``)
        files.add(path)
        parts = name.split(".")
        pending += [".".join(parts[:i]) for i in range(1, len(parts))]  # packages above it
        package = name if path.name == "__init__.py" else ".".join(parts[:-1])
        stat = path.stat()
        for imported in _project_imports(path, (stat.st_mtime_ns, stat.st_size), package):
            if imported == top or imported.startswith(top + "."):
                pending.append(imported)
    return tuple(sorted(files))
