"""A stage, declared once: its name, function, typed inputs and outputs, key parts, doc line,
and whether its tasks run side by side. Each ``pipeline/stages/<name>.py`` declares its
``STAGE``; the plan, the doit tasks, the keys (``graph/code.py``) and ``dodo.py`` read the
declarations (``graph/stages.py`` lists them), and no other place names a stage's facts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.cache.key import TOOL_PACKAGES


@dataclass(frozen=True)
class File:
    """An input or output of a stage: its kind (what the file holds, which the plan checks
    when it wires one stage's output into another's input) and, for outputs, its name. A
    role ending in ``*`` is a family (``tosa_*``: ``tosa_u55``, ``tosa_u85``); its name holds
    ``{}`` for the part after the prefix."""

    kind: str
    name: str = ""


KEEP = "*"  # a view under the output's own name


@dataclass(frozen=True)
class Stage:
    """One stage. ``run(inputs, outputs, options, params, where)`` writes every output
    (role -> path, in a work folder) from the inputs (role -> path) and raises a
    ``UserError`` for anything the user must fix."""

    name: str
    doc: str
    run: Callable[..., None]
    inputs: Mapping[str, File]
    outputs: Mapping[str, File]
    packages: tuple[str, ...] = TOOL_PACKAGES  # Python packages whose versions it depends on
    tools: Callable[[dict], dict[str, str]] | None = None  # options -> external fingerprints
    alongside: bool = False  # its tasks of one serial build run side by side (alongside.py)
    # Outputs that appear in a target's model folder (role -> name there; KEEP: the output's
    # own name; None: read by the target's report.json, not copied).
    views: Mapping[str, str | None] = field(default_factory=dict)
    # ``check(inputs, outputs)``: why outputs restored from a store cannot be what this stage
    # writes (a forged entry), or None; cheap (no torch, numpy or tosa import): it runs on
    # every restore. Every ``*.json`` output is also checked to parse (graph/actions.py).
    check: Callable[[Mapping[str, Path], Mapping[str, Path]], str | None] | None = None

    @property
    def module(self) -> str:
        return self.run.__module__

    def file(self, role: str, files: Mapping[str, File]) -> File | None:
        """The declaration of ``role`` among ``files`` (a family's for ``tosa_u55``)."""
        if role in files:
            return files[role]
        return next((f for r, f in files.items() if r.endswith("*") and
                     role.startswith(r[:-1])), None)

    def outputs_in(self, folder: Path, roles: tuple[str, ...] | None = None) -> dict[str, Path]:
        """Output role -> path in ``folder``: the fixed outputs, plus the family members
        ``roles`` names (``tosa_u55``)."""
        paths = {r: folder / f.name for r, f in self.outputs.items() if not r.endswith("*")}
        for role in roles or ():
            declared = self.file(role, self.outputs)
            prefix = next(r[:-1] for r in self.outputs if r.endswith("*") and role.startswith(r[:-1]))
            paths[role] = folder / declared.name.format(role[len(prefix):])
        return paths
