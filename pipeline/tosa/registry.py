"""Operator visitors, found automatically: every ``pipeline/tosa/ops/op_*.py`` is imported and
registers the FX targets it lowers with ``@lowers("aten.add.Tensor", ...)``.

A visitor is ``visit(node, ctx)``: it reads its inputs' TOSA tensors from ``ctx``, emits TOSA
operators into ``ctx.graph`` and defines the node's output tensor. Adding an operator is its
``op_<name>.py`` plus its test; nothing else is edited.

Stage keys see the operator files two ways (``pipeline/graph/code.py``): the index of which
file declares which targets (``static_index``, read from the files' text, so planning imports
no torch), and the files a stage's run dispatched to (``take_used``). Editing an operator a
model does not use therefore moves none of its keys. The targets a file declares must be
string literals in its ``@lowers(...)``: ``tests/tosa/test_registry.py`` checks the index
against what the files register.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.fx import target_name

Visitor = Callable[[Any, Any], None]  # (torch.fx.Node, LoweringContext) -> None

_VISITORS: dict[str, Visitor] = {}
_LOADED = False
_USED: set[str] = set()  # modules of the visitors handed out since the last take_used()
OPS_DIR = Path(__file__).resolve().parent / "ops"
_DECLARATION = re.compile(r"@lowers\(([^)]*)\)")
_STRING = re.compile(r"[\"']([^\"']+)[\"']")


def lowers(*targets: str) -> Callable[[Visitor], Visitor]:
    """Register the decorated visitor for FX targets named like ``aten.conv2d.default``."""

    def register(visitor: Visitor) -> Visitor:
        for target in targets:
            if target in _VISITORS and _VISITORS[target] is not visitor:
                raise RuntimeError(
                    f"{target} has two visitors: {_VISITORS[target].__module__} "
                    f"and {visitor.__module__}"
                )
            _VISITORS[target] = visitor
        return visitor

    return register


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    package = importlib.import_module("pipeline.tosa.ops")
    for module in pkgutil.iter_modules(package.__path__):
        if module.name.startswith("op_"):
            importlib.import_module(f"pipeline.tosa.ops.{module.name}")
    _LOADED = True


def lowered_targets() -> frozenset[str]:
    """The FX targets that have a visitor: the normalisation keeps them as they are."""
    return frozenset(visitors())


def visitors() -> dict[str, Visitor]:
    """Every registered target -> visitor (imports all operator modules on first use)."""
    _load_all()
    return dict(_VISITORS)


def visitor_for(target: Any) -> Visitor | None:
    """The visitor of an FX call target (None without one); its module counts as used."""
    _load_all()
    visitor = _VISITORS.get(target_name(target))
    if visitor is not None:
        _USED.add(visitor.__module__)
    return visitor


def take_used() -> set[str]:
    """The operator modules whose visitors were handed out since the last call (then none)."""
    used = set(_USED)
    _USED.clear()
    return used


def static_index(ops_dir: Path = OPS_DIR) -> dict[str, tuple[str, ...]]:
    """``op_<name>.py`` -> the targets its ``@lowers(...)`` declare, read from the text."""
    index = {}
    for path in sorted(ops_dir.glob("op_*.py")):
        found = [t for args in _DECLARATION.findall(path.read_text()) for t in _STRING.findall(args)]
        index[path.name] = tuple(sorted(found))
    return index
