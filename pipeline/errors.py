"""User-facing errors, kept apart from internal bugs.

Every message follows one grammar:
``<where>: <what> must be <allowed>; got <value>[. <fix>]``
where ``<where>`` is ``file:line: field`` for configuration, ``target/stage`` for tasks and
the FX node with its source line for lowering. A ``UserError`` is printed as its message
alone (never a traceback); anything else escaping a task is a bug in this project.
"""

from __future__ import annotations

from collections.abc import Sequence


class UserError(Exception):
    """A mistake in the user's input or environment; printed without a traceback."""


class ConfigError(UserError):
    """One or more problems in targets.yaml, all reported at once."""

    def __init__(self, issues: Sequence[str]):
        self.issues = list(issues)
        count = len(self.issues)
        head = f"{count} problem{'s' if count != 1 else ''} in the configuration:"
        super().__init__("\n".join([head, *self.issues]))


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

    def __init__(self, where: str, op: str, source: str, allowed: str = ""):
        self.op, self.source = op, source
        detail = f"operator {op} must be one the TOSA lowering supports"
        if allowed:
            detail += f" ({allowed})"
        super().__init__(f"{where}: {detail}; got {op} at {source or '<unknown source>'}")


class VerificationError(UserError):
    """The TOSA reference model disagreed with torch on the same quantized graph."""
