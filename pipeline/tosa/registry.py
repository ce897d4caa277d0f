"""Operator visitors, found automatically: every ``pipeline/tosa/ops/op_*.py`` is imported and
registers the FX targets it lowers with ``@lowers("aten.add.Tensor", ...)``.

A visitor is ``visit(node, ctx)``: it reads its inputs' TOSA tensors from ``ctx``, emits TOSA
operators into ``ctx.graph`` and defines the node's output tensor. Adding an operator is its
``op_<name>.py`` plus its test; nothing else is edited.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

Visitor = Callable[[Any, Any], None]  # (torch.fx.Node, LoweringContext) -> None

_VISITORS: dict[str, Visitor] = {}
_LOADED = False


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


def call_arguments(node: Any) -> dict:
    """An operator call's arguments by their schema names, defaults filled in (None where the
    schema has none): ``call_arguments(pool)["divisor_override"]``."""
    values = {}
    for i, argument in enumerate(node.target._schema.arguments):
        if i < len(node.args):
            values[argument.name] = node.args[i]
        elif argument.name in node.kwargs:
            values[argument.name] = node.kwargs[argument.name]
        else:
            values[argument.name] = argument.default_value if argument.has_default_value() else None
    return values


def target_name(target: Any) -> str:
    """The registry key of an FX call target: ``aten.add.Tensor``, ``tosa.rescale``, ..."""
    name = getattr(target, "tosa_name", None)
    if name:
        return name
    if hasattr(target, "_schema") or type(target).__name__ == "OpOverload":
        return str(target)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__name__', repr(target))}"


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    package = importlib.import_module("pipeline.tosa.ops")
    for module in pkgutil.iter_modules(package.__path__):
        if module.name.startswith("op_"):
            importlib.import_module(f"pipeline.tosa.ops.{module.name}")
    _LOADED = True


def visitors() -> dict[str, Visitor]:
    """Every registered target -> visitor (imports all operator modules on first use)."""
    _load_all()
    return dict(_VISITORS)


def visitor_for(target: Any) -> Visitor | None:
    _load_all()
    return _VISITORS.get(target_name(target))
