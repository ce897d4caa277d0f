"""Ethos-U operator constraints, checked on a TOSA flatbuffer before Vela runs.

Vela compiles TOSA without CPU fallback: an operator outside the NPU's constraints is a
compiler error (``Non-passthrough operation (AvgPool) could not run on NPU``) that names
neither the model line nor the rule. This check names both. The rules are Vela 5.2's own
(``vela --supported-ops-report``, TOSA sections), kept to those Vela does not work around
itself: it splits pooling/convolution strides above 3 and large kernels, for example, so
those are not errors here. Ethos-U85 takes the whole TOSA 1.0 PRO-INT profile; Ethos-U55
and -U65 add the rules below.

This module keeps the machinery and the rules that hold for every operator (integer tensors
only; Vela's U55/U65 table of unsupported operators; no bool tensors there). A rule about
one TOSA operator is declared by the operator file that emits it
(``pipeline/tosa/ops/op_<name>.py``, ``OPERATOR = Operator(npu=...)``) and read from the
registry, which counts the file as used by this check (the Vela stage's second-level key).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from pipeline.errors import UserError, see
from pipeline.tosa import registry
from pipeline.tosa.flatbuffer import Resolved, read_block

_FLOAT_TYPES = {"fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2"}
# Vela 5.2 "Ethos-U55 and Ethos-U65 TOSA Not Supported Operators".
U55_UNSUPPORTED = frozenset(
    {
        "BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "BITWISE_NOT", "INTDIV", "LOGICAL_AND",
        "LOGICAL_RIGHT_SHIFT", "LOGICAL_OR", "LOGICAL_XOR", "LOGICAL_NOT", "SELECT", "EQUAL",
        "GREATER", "GREATER_EQUAL", "REDUCE_ALL", "REDUCE_ANY", "GATHER", "SCATTER",
    }
)  # fmt: skip


def read_operators(path: Path) -> list[Resolved]:
    """The operators of a TOSA flatbuffer's main block (constants left out) with their
    tensors, locations and the operators that wrote their inputs."""
    return read_block(path).resolved()


# A rule: (operator) -> (constraint it breaks, what it has) or None.
Rule = Callable[[Resolved], "tuple[str, str] | None"]


def _integer_only(op: Resolved):
    floats = sorted({t.dtype for t in (*op.inputs, *op.outputs) if t.dtype in _FLOAT_TYPES})
    if floats:
        return "use integer tensors only (TOSA PRO-INT)", f"{', '.join(floats)} tensors"
    return None


# Why the masking and lookup operators are missing there, and what to do instead.
# The U55/U65 variant rewrites masks (replace_bools_pass) and int8 lookups
# (replace_gather_pass); these name what it leaves.
_NO_MASKS = (
    "Ethos-U55/U65 have no comparison, logical or select operators, and their variant "
    "computes masks as integers only where no graph input or output is bool: pass masks as "
    "integer (0/1) inputs and return no bools"
)
_U55_INSTEAD = {
    **dict.fromkeys(("EQUAL", "GREATER", "GREATER_EQUAL", "SELECT", "LOGICAL_AND",
                     "LOGICAL_OR", "LOGICAL_XOR", "LOGICAL_NOT"), _NO_MASKS),
    "GATHER": "Ethos-U55/U65 have no GATHER and their variant looks up int8 and int16 "
    "values only: look other rows up outside the model and pass the looked-up tensor as the "
    "input",
    "SCATTER": "Ethos-U55/U65 have no SCATTER and their variant writes rows at constant "
    "indices only: make the indices constants (a buffer, torch.arange) or write outside the "
    "model",
}  # fmt: skip


def _u55_supported(op: Resolved):
    if op.op in U55_UNSUPPORTED:
        why = _U55_INSTEAD.get(op.op)
        return "be an operator Ethos-U55/U65 supports" + (f" ({why})" if why else ""), op.op
    return None


def _u55_no_bool(op: Resolved):
    """Vela 5.2 runs no U55/U65 operator on bool tensors (CAST, TILE, RESHAPE, ...)."""
    if op.op not in U55_UNSUPPORTED and any(t.dtype == "bool" for t in (*op.inputs, *op.outputs)):
        return f"use no bool tensors ({_NO_MASKS})", "a bool tensor"
    return None


# The rules every operator is checked against, before the ones its operator file declares.
GENERIC: dict[str, tuple[Rule, ...]] = {
    "u55": (_integer_only, _u55_supported, _u55_no_bool),
    "u65": (_integer_only, _u55_supported, _u55_no_bool),
    "u85": (_integer_only,),
}


def broken(op: Resolved, family_name: str) -> list[tuple[str, str]]:
    """(what it must, what it has) of every rule ``op`` breaks on an NPU family: the generic
    ones, then those of the operator file that owns ``op``'s TOSA operator."""
    rules = (*GENERIC[family_name], *registry.npu_rules(family_name).get(op.op, ()))
    return [found for rule in rules if (found := rule(op))]


def family(accelerator: str) -> str:
    """``u55``, ``u65`` or ``u85`` of an accelerator name like ``ethos-u55-128``."""
    parts = accelerator.split("-")
    if len(parts) != 3 or parts[1] not in GENERIC:
        raise UserError(
            f"accelerator must be ethos-<{'|'.join(GENERIC)}>-<macs>; got {accelerator!r}"
        )
    return parts[1]


def violations(operators: list[Resolved], accelerator: str) -> Iterator[str]:
    """One message per broken rule: ``<location>: TOSA <OP> on <accelerator> must ...``."""
    name = family(accelerator)
    for op in operators:
        for must, got in broken(op, name):
            yield f"{op.location}: TOSA {op.op} on {accelerator} must {must}; got {got}"


def verdicts(tosa: Path, family_name: str) -> list[list[list[str]]]:
    """Per operator of ``tosa``'s main block, in order: ``[must, got]`` of every rule it
    breaks on an NPU family (``broken``). The lower stage keeps them (placement.json), so the
    stages after it check placement without importing the operator files (and torch)."""
    return [[list(found) for found in broken(op, family_name)] for op in read_operators(tosa)]


def _what_to_do(operators: list[Resolved], known: list) -> str:
    """The fix to suggest: CPU fallback when the CPU kernels run every operator the NPU
    refuses, with its tensor types (``pipeline/cpu/graph_format.py``), else rewriting the
    lines."""
    from pipeline.cpu.graph_format import DTYPES, OPS

    refused = [op for op, rules in zip(operators, known, strict=True) if rules]
    names = ", ".join(sorted({op.op for op in refused}))
    rewrite = "rewrite those lines with what the NPU takes (docs/operators.md) or pick an NPU "
    cpu_cannot = sorted({f"{op.op} of {t.dtype}" if op.op in OPS else op.op for op in refused
                         for t in (*op.inputs, *op.outputs)
                         if op.op not in OPS or (t.dtype not in DTYPES and t.dtype != "shape")})
    if not cpu_cannot:
        return (f"Set `npu: {{fallback: cpu}}` on the target to run {names} on its CPU, or "
                f"{rewrite}that takes them")
    return (f"{rewrite[0].upper()}{rewrite[1:]}that takes them (`npu: {{fallback: cpu}}` would "
            f"not help: the CPU kernels do not run {', '.join(cpu_cannot)})")


def check_npu_constraints(tosa: Path, accelerator: str, where: str = "",
                          known: list | None = None) -> None:
    """Raise if any operator of ``tosa`` breaks ``accelerator``'s constraints (all listed);
    ``known``: ``verdicts(tosa, family)`` when already computed.

    Raises:
        UserError: every violation, each naming the FX node, its source line, the target
            NPU and the constraint.
    """
    if known is not None and not any(known):
        return  # every operator placed: the graph need not be read again for its locations
    operators = read_operators(tosa)
    if known is None:
        known = [broken(op, family(accelerator)) for op in operators]
    found = [f"{op.location}: TOSA {op.op} on {accelerator} must {must}; got {got}"
             for op, rules in zip(operators, known, strict=True) for must, got in rules]
    if found:
        prefix = f"{where}: " if where else ""
        raise UserError(
            f"{prefix}{len(found)} operator(s) outside the {accelerator} constraints of "
            "Vela (this target has no CPU fallback):\n  " + "\n  ".join(found)
            + f"\n  {_what_to_do(operators, known)}"
            + f"\n  {see('docs/errors.md#npu-placement')}"
        )
