"""Writes into the model's inputs: the value stays, the write-back goes.

A model that updates an argument in place (``x.add_(y)``, ``x += y``, ``x.relu_()`` on a
forward() argument) is exported with a ``USER_INPUT_MUTATION`` output: the new value to copy
back into the caller's tensor. A compiled graph has no caller's tensor to write into, and
``program.module()`` turns that output into a ``copy_`` the lowering has no form for; the
value itself is kept wherever the model uses or returns it.
"""

from __future__ import annotations

from torch.export import ExportedProgram
from torch.export.graph_signature import OutputKind


def mutates_inputs(program: ExportedProgram) -> bool:
    return any(
        spec.kind == OutputKind.USER_INPUT_MUTATION
        for spec in program.graph_signature.output_specs
    )


def drop_input_mutations(program: ExportedProgram) -> None:
    """Remove the write-back outputs of ``program`` (in place)."""
    specs = program.graph_signature.output_specs
    keep = [i for i, spec in enumerate(specs) if spec.kind != OutputKind.USER_INPUT_MUTATION]
    if len(keep) == len(specs):
        return
    output = program.graph.output_node()
    values = output.args[0]
    output.args = (tuple(values[i] for i in keep),)
    specs[:] = [specs[i] for i in keep]
