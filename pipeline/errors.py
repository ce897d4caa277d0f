"""User-facing errors, kept apart from internal bugs.

Every message follows one grammar:
``<where>: <what> must be <allowed>; got <value>[. <fix>]``
where ``<where>`` is ``file:line: field`` for configuration, ``target/stage`` for tasks and
the FX node with its source line for lowering. A ``UserError`` is printed as its message
alone (never a traceback); anything else escaping a task is a bug in this project.

A message whose kind of mistake a docs page explains ends with a pointer to it,
``(see docs/<page>.md#<section>)``, made by ``see``; ``tests/test_documentation.py`` checks that every
such page and section exists.
"""

from __future__ import annotations

from collections.abc import Sequence


def see(page: str) -> str:
    """The pointer a message ends with: ``see("docs/caching.md#remote-store")`` gives
    ``(see docs/caching.md#remote-store)``."""
    if not page.startswith("docs/"):
        raise ValueError(f"page must be a path under docs/; got {page!r}")
    return f"(see {page})"


class UserError(Exception):
    """A mistake in the user's input or environment; printed without a traceback."""


class ConfigError(UserError):
    """One or more problems in targets.yaml, all reported at once, then where every field
    is described."""

    def __init__(self, issues: Sequence[str]):
        self.issues = list(issues)
        count = len(self.issues)
        head = f"{count} problem{'s' if count != 1 else ''} in the configuration:"
        tail = see("docs/targets.md")  # every field, its allowed values and default
        super().__init__("\n".join([head, *self.issues, tail]))


class UnreadableInput(UserError):
    """An artifact a stage reads is not what its producer writes (a forged or damaged store
    entry, a file replaced by hand): the build names the store entry it came from and moves
    that entry aside (graph/actions.py)."""

    def __init__(self, path, what: str, why: str):
        self.path, self.what, self.why = path, what, why
        super().__init__(f"{path}: must be {what}; got {why}")


class StageError(UserError):
    """An external tool or a stage failed while building one target."""

    def __init__(self, where: str, what: str, command: Sequence[str] | None = None,
                 stderr: str = ""):
        self.where, self.what = where, what
        self.command = list(command or [])
        tail = "\n".join(stderr.strip().splitlines()[-20:])
        parts = [f"{where}: {what}"]
        if self.command:
            parts.append("  command: " + " ".join(self.command))
        if tail:
            parts.append("  stderr (last lines):\n    " + tail.replace("\n", "\n    "))
        super().__init__("\n".join(parts))


class UnsupportedOperatorError(UserError):
    """The lowering met an operator it cannot express for the target; never a CPU fallback."""

    def __init__(self, where: str, op: str, source: str, allowed: str = "", hint: str = ""):
        self.where, self.op, self.source, self.allowed, self.hint = where, op, source, allowed, hint
        detail = f"operator {op} must be one that the TOSA lowering supports"
        if allowed:
            detail += f" ({allowed})"
        text = f"{where}: {detail}; got {op} at {source or '<unknown source>'}"
        super().__init__(text + (f". {hint}" if hint else ""))


class UnsupportedOperatorsError(UnsupportedOperatorError):
    """Every operator of one graph that the lowering cannot express, reported at once."""

    def __init__(self, where: str, blockers: Sequence[UnsupportedOperatorError]):
        self.blockers = list(blockers)
        if len(self.blockers) == 1:
            first = self.blockers[0]
            super().__init__(where, first.op, first.source, first.allowed, first.hint)
            self.args = (str(first),)
            return
        groups: dict[str, list[UnsupportedOperatorError]] = {}
        for blocker in self.blockers:
            groups.setdefault(blocker.op, []).append(blocker)
        lines = [
            f"{where}: every operator must be one that the TOSA lowering supports; got "
            f"{len(groups)} that {'is' if len(groups) == 1 else 'are'} not "
            f"({len(self.blockers)} places):"
        ]
        hints = [found[0].hint for found in groups.values() if found[0].hint]
        common = max(set(hints), key=hints.count) if hints else ""
        for op, found in groups.items():
            sources = list(dict.fromkeys(b.source or "<unknown source>" for b in found))
            shown = ", ".join(sources[:3]) + (f", and {len(sources) - 3} more" if len(sources) > 3 else "")
            lines.append(f"  {op} (x{len(found)}) at {shown}")
            if found[0].allowed:
                lines.append(f"      allowed: {found[0].allowed}")
            if found[0].hint and found[0].hint != common:
                lines.append(f"      {found[0].hint}")
        if common:
            lines.append(f"  {common}")
        self.where, self.op, self.source = where, self.blockers[0].op, self.blockers[0].source
        self.allowed, self.hint = self.blockers[0].allowed, self.blockers[0].hint
        UserError.__init__(self, "\n".join(lines))


class VerificationError(UserError):
    """The TOSA reference model disagreed with torch on the same quantized graph."""
