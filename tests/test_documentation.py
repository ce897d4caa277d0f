"""The documentation holds together: every link resolves to a page and a heading, every file it
names exists, no table row is too wide to read, and every docs page an error message points
at exists (the messages' pointers are the docs' contract with users).

Scanned: README.md, docs/*.md and runtime/README.md for links and rows; those plus every
module of pipeline/ (docstrings, comments, messages), dodo.py, cmake/ and runtime/ sources
for file references (and ci/ for pointers into docs/).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", REPO / "runtime" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SOURCES = [REPO / "dodo.py", *sorted((REPO / "pipeline").rglob("*.py")),
           *sorted(p for p in (REPO / "runtime").rglob("*") if p.suffix in (".h", ".cc", ".cpp")),
           *sorted((REPO / "runtime").rglob("CMakeLists.txt")),
           *sorted(p for p in (REPO / "cmake").rglob("*") if p.is_file()),
           *sorted((REPO / "ci").glob("*.yml"))]
MAX_ROW = 120
# Files of other packages named by their own path: tosa-tools' generated flatbuffer classes,
# and the VGF library's headers.
EXTERNAL = {"tosa/Op.py", "tosa/TosaBasicBlock.py", "vgf/decoder.h", "vgf/decoder.hpp"}
ROOMS = {p.name for p in (REPO / "pipeline").iterdir() if p.is_dir() and p.name != "__pycache__"}
TOP = ("pipeline", "runtime", "tests", "benchmarks", "cmake", "models", "ci", "docs")

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
DOCS_POINTER = re.compile(r"\bdocs/[\w./-]*\w\.md(?:#[\w-]+)?")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./<>*{}-]*[\w>*}])" % "|".join(TOP + tuple(ROOMS)))
DOTTED = re.compile(r"(?<![\w.])pipeline(?:\.\w+)+(?![\w*<]|\.[\w*<])")  # not ``op_*``


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def slugs(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``page``."""
    found, seen, fenced = set(), {}, False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"#{1,6} (.+)", line)
        if match:
            slug = re.sub(r"[^\w\- ]", "", match[1].strip().lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def _resolve(target: str, base: Path) -> str | None:
    """Why a link ``target`` (relative to folder ``base``) does not resolve, else None."""
    name, _, anchor = target.partition("#")
    page = (base / name).resolve() if name else None
    if page is not None and not page.exists():
        return f"{name} does not exist"
    if anchor and page is not None and page.suffix != ".md":
        return f"{name} is not a page with headings"
    if anchor and anchor not in slugs(page or base):
        return f"#{anchor} is not a heading of {_rel(page) if page else 'this page'}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_link_resolves(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # https://, mailto:
        why = _resolve(target, page.parent) if "#" not in target[:1] else \
            _resolve(target, page)
        if why:
            broken.append(f"{target}: {why}")
    assert broken == []


def test_every_docs_pointer_in_the_code_resolves():
    broken = []
    for source in SOURCES:
        for pointer in DOCS_POINTER.findall(source.read_text()):
            why = _resolve(pointer, REPO)
            if why:
                broken.append(f"{_rel(source)}: {pointer}: {why}")
    assert broken == []


def test_error_messages_point_at_docs_not_readme():
    stale = [f"{_rel(s)}:{n}" for s in SOURCES if s.suffix == ".py"
             for n, line in enumerate(s.read_text().splitlines(), 1) if "README" in line]
    assert stale == []


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_table_rows_stay_readable(page):
    wide = [f"line {n}: {len(line)} characters" for n, line in
            enumerate(page.read_text().splitlines(), 1)
            if line.startswith("|") and len(line) > MAX_ROW]
    assert wide == []


def _missing_path(ref: str, source: Path) -> bool:
    ref = ref.rstrip(".")
    if any(c in ref for c in "<>*{}") or ref in EXTERNAL:
        return False  # a pattern (``op_<name>.py``, ``runtime/*``), or another package's file
    first = ref.split("/", 1)[0]
    candidates = [REPO / ref] if first in TOP else []
    in_pipeline = source.suffix == ".py" and source.is_relative_to(REPO / "pipeline")
    if first in ROOMS and in_pipeline:  # ``graph/alongside.py`` in a docstring of pipeline/
        candidates.append(REPO / "pipeline" / ref)
    elif first not in TOP:
        return False
    if first == "tests" and source.is_relative_to(REPO / "runtime"):
        candidates.append(REPO / "runtime" / ref)  # runtime/CMakeLists.txt's own tests/
    return not any(c.exists() for c in candidates)


def test_every_named_file_exists():
    missing = sorted({f"{_rel(source)}: {ref}" for source in PAGES + SOURCES
                      for ref in PATH.findall(source.read_text()) if _missing_path(ref, source)})
    assert missing == []


def _defined(module: Path) -> set[str]:
    tree = ast.parse(module.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _missing_module(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:cut])
        module = base.with_suffix(".py") if base.with_suffix(".py").exists() else \
            base / "__init__.py"
        if module.exists():
            rest = parts[cut:]
            # a lazy export table (``pipeline/config/__init__.py``) names it as a string
            return bool(rest) and rest[0] not in _defined(module) and \
                not (base / f"{rest[0]}.py").exists() and f'"{rest[0]}"' not in module.read_text()
    return True


def test_every_named_module_exists():
    sources = PAGES + [s for s in SOURCES if s.suffix == ".py"]
    missing = sorted({f"{_rel(source)}: {name}" for source in sources
                      for name in DOTTED.findall(source.read_text()) if _missing_module(name)})
    assert missing == []


# ---- the checks themselves catch what they are for --------------------------------------


def test_slugs_follow_github(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# A `vela` stage (U55/U65)\n## io_meta\n```\n# not a heading\n```\n"
                    "## Notes\n## Notes\n## python -m pipeline.cache\n")
    assert slugs(page) == {"a-vela-stage-u55u65", "io_meta", "notes", "notes-1",
                           "python--m-pipelinecache"}


def test_a_broken_link_or_anchor_is_named(tmp_path):
    (tmp_path / "a.md").write_text("# Here\n")
    assert _resolve("a.md#here", tmp_path) is None
    assert _resolve("a.md#there", tmp_path) == \
        f"#there is not a heading of {(tmp_path / 'a.md').resolve()}"
    assert _resolve("b.md", tmp_path) == "b.md does not exist"


def test_a_stale_path_or_module_is_found():
    source = REPO / "pipeline" / "graph" / "docs.py"
    assert _missing_path("pipeline/tosa/npu_constraints.py", source)
    assert _missing_path("tosa/emit.py", source)  # room-relative, in pipeline/
    assert not _missing_path("tosa/emit/fp.py", source)
    assert not _missing_path("tests/tosa/ops/test_op_<name>.py", source)
    assert _missing_module("pipeline.tosa.npu_constraints")
    assert _missing_module("pipeline.graph.docs.no_such_name")
    assert not _missing_module("pipeline.graph.docs.stage_block")
    assert not _missing_module("pipeline.config.ProjectConfig")  # a lazy export
