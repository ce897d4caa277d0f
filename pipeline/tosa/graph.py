"""A small in-memory TOSA graph: what the operator visitors build and the TOSA passes edit.

Kept apart from the flatbuffer serializer so passes can inspect and rewrite operators (the
serializer's objects are write-only) and so a serializer API change touches one module
(``serialize.py``). Tensor types are TOSA names in lower case: ``int8``, ``int32``, ``int48``,
``fp32``, ``shape``, ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.errors import UserError
from pipeline.tosa.spec import TosaSpec


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    data: np.ndarray | None = None  # set for constants

    @property
    def is_const(self) -> bool:
        return self.data is not None


@dataclass
class Operator:
    op: str  # TOSA operator name, e.g. "CONV2D"
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    location: str = ""  # FX node and user source line, for debugging and errors


class TosaGraph:
    """Tensors, operators in topological order, and the graph's inputs and outputs."""

    def __init__(self, spec: TosaSpec):
        self.spec = spec
        self.tensors: dict[str, Tensor] = {}
        self.operators: list[Operator] = []
        self.inputs: list[str] = []
        self.outputs: list[str] = []

    def _unique(self, hint: str) -> str:
        name, i = hint, 1
        while name in self.tensors:
            name, i = f"{hint}_{i}", i + 1
        return name

    def _add(self, tensor: Tensor, where: str, any_profile: bool = False) -> str:
        if not any_profile and not self.spec.supports_dtype(tensor.dtype):
            raise UserError(
                f"{where}: tensor {tensor.name} type must be one of "
                f"{', '.join(self.spec.allowed_dtypes())} for {self.spec}; "
                f"got {tensor.dtype}"
            )
        self.tensors[tensor.name] = tensor
        return tensor.name

    def add_input(self, name: str, shape, dtype: str, where: str = "") -> str:
        name = self._add(Tensor(self._unique(name), tuple(shape), dtype), where or name)
        self.inputs.append(name)
        return name

    def add_tensor(self, hint: str, shape, dtype: str, where: str = "") -> str:
        """An intermediate (non-constant) tensor; returns its unique name."""
        return self._add(Tensor(self._unique(hint), tuple(shape), dtype), where or hint)

    def add_const(
        self, hint: str, data, dtype: str, where: str = "", any_profile: bool = False
    ) -> str:
        """A constant tensor holding ``data`` (array-like); returns its unique name.

        ``any_profile``: an operand whose type the operator fixes in every profile (MUL's
        int8 ``shift`` also in an FP-only graph), so the spec's tensor types do not apply.
        """
        array = np.asarray(data)
        shape = (len(array),) if dtype == "shape" else array.shape
        tensor = Tensor(self._unique(hint), tuple(shape), dtype, array)
        return self._add(tensor, where or hint, any_profile)

    def add_op(
        self, op: str, inputs: list[str], outputs: list[str], location: str = "", **attrs
    ) -> Operator:
        missing = [n for n in [*inputs, *outputs] if n not in self.tensors]
        if missing:
            raise KeyError(f"{op} at {location}: undefined tensors {missing}")
        operator = Operator(op, list(inputs), list(outputs), attrs, location)
        self.operators.append(operator)
        return operator

    def insert_before(
        self, anchor: Operator, op: str, inputs: list[str], out: str, **attrs
    ) -> str:
        """Add ``op`` just before ``anchor`` (keeping topological order) with the anchor's
        source location: what a pass emits when it replaces ``anchor``. Returns ``out``."""
        self.operators.insert(
            self.operators.index(anchor), Operator(op, list(inputs), [out], attrs, anchor.location)
        )
        return out

    # --- queries used by passes -------------------------------------------------------------
    def producer(self, tensor: str) -> Operator | None:
        return next((o for o in self.operators if tensor in o.outputs), None)

    def consumers(self, tensor: str) -> list[Operator]:
        return [o for o in self.operators if tensor in o.inputs]

    def is_graph_output(self, tensor: str) -> bool:
        return tensor in self.outputs

    def replace_uses(self, old: str, new: str) -> None:
        """Make every reader of ``old`` (operators and graph outputs) read ``new``."""
        for operator in self.operators:
            operator.inputs = [new if n == old else n for n in operator.inputs]
        self.outputs = [new if n == old else n for n in self.outputs]

    def bypass(self, operator: Operator) -> bool:
        """Remove an operator whose output equals its first input, rewiring its readers.

        Returns False (and keeps it) when that would make a graph output the same tensor as a
        graph input or another output: every graph output must stay a distinct tensor.
        """
        src, out = operator.inputs[0], operator.outputs[0]
        if self.is_graph_output(out) and (src in self.inputs or self.is_graph_output(src)):
            return False
        self.operators.remove(operator)
        self.replace_uses(out, src)
        return True

    def rewrite(self, op: str, *rules) -> None:
        """Apply ``rule(graph, operator) -> changed`` to every ``op`` operator until none
        changes anything, then drop the tensors nobody uses any more."""
        changed = True
        while changed:
            changed = any(
                rule(self, o)
                for o in list(self.operators)
                if o.op == op and o in self.operators
                for rule in rules
            )
        self.remove_unused_tensors()

    def remove_unused_tensors(self) -> None:
        used = {n for o in self.operators for n in (*o.inputs, *o.outputs)}
        used |= set(self.inputs) | set(self.outputs)
        self.tensors = {k: v for k, v in self.tensors.items() if k in used}

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for operator in self.operators:
            counts[operator.op] = counts.get(operator.op, 0) + 1
        return counts
