"""FX helpers every room uses: a call's arguments by their schema names, the registry name of
a call target, the user's source line that produced a node (errors name it), and pooling
arguments as torch reads them."""

from __future__ import annotations

import importlib.util
import math
import os
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # importing this module costs no torch: the plan reads the registry's index
    from torch import fx

_FRAME = re.compile(
    r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\n\s*(?P<code>.*)'
)
# Where a frame comes from, best first: the user's own files, then libraries that define
# models (transformers, torchvision, ... in site-packages), then torch and this project.
_INTERNAL_DIRS = (
    os.path.dirname(importlib.util.find_spec("torch").origin) + os.sep,
    os.path.dirname(__file__) + os.sep,  # pipeline/
)
_LIBRARY_MARKERS = ("site-packages", "dist-packages")


def _frame_rank(path: str) -> int:
    if path.startswith(_INTERNAL_DIRS) or path.startswith("<"):  # <eval_with_key>: generated
        return 2
    return 1 if any(marker in path for marker in _LIBRARY_MARKERS) else 0


def source_of(node: fx.Node) -> str:
    """``file:line (code)`` that produced ``node``: the innermost frame of the user's own files,
    else of a model library (transformers, torchvision...), else of torch; "" without a trace."""
    frames = list(_FRAME.finditer(node.meta.get("stack_trace") or ""))
    if not frames:
        return ""
    best = min(_frame_rank(m["file"]) for m in frames)
    last = [m for m in frames if _frame_rank(m["file"]) == best][-1]
    return f"{last['file']}:{last['line']} ({last['code'].strip()})"


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


def pair(value) -> tuple[int, int]:
    """(height, width) of a pooling argument given as one int or a list of one or two."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return (int(values[0]), int(values[-1]))


def adaptive_windows(size: int, out: int) -> list[tuple[int, int]]:
    """torch's adaptive pooling windows ``[start, end)`` along one axis."""
    return [((i * size) // out, math.ceil((i + 1) * size / out)) for i in range(out)]
