"""The decomposition table of the normalisation: torch's default one, minus every operator the
lowering has a visitor for, plus our own decompositions of composite operators.

Which operators the lowering takes as they are is the lowering's to say: every function here
is given that set (``lowered``, the targets of ``pipeline.tosa.registry``) by its caller, so
this room never imports the rooms above it."""

from __future__ import annotations

import functools

import torch
from torch import fx

from pipeline.normalise.decompose import DECOMPOSITIONS


# Kept for normalisation's own rewrite (folded into a conv/linear, else MUL + ADD).
KEEP = {"aten._native_batch_norm_legit_no_training.default"}


def native_ops(lowered: frozenset[str]) -> frozenset[str]:
    """Operators kept as they are: those the lowering takes, and those normalisation rewrites."""
    return lowered | KEEP


@functools.cache
def decomposition_table(lowered: frozenset[str]) -> dict:
    """torch.export's default decompositions, keeping the operators the lowering takes
    (``lowered``), with ours (cached per set: one per process in practice)."""
    native = native_ops(lowered)
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if str(op) in native:
            del table[op]
    table.update(DECOMPOSITIONS)
    return table


def needs_decomposition(node: fx.Node, table: dict, lowered: frozenset[str]) -> bool:
    """Would ``run_decompositions(table)`` rewrite this call? In-place operators always are, and
    so are CompositeImplicitAutograd ones (batch_norm, dropout...) without a visitor."""
    target = node.target
    if target in table:  # an entry may rewrite only some calls (``applies``)
        applies = getattr(table[target], "applies", None)
        return applies is None or applies(node)
    schema = getattr(target, "_schema", None)
    if schema is None:
        return False
    if schema.is_mutable:
        return True
    return str(target) not in native_ops(lowered) and torch._C._dispatch_has_kernel_for_dispatch_key(
        target.name(), "CompositeImplicitAutograd"
    )
