"""Fuse RESCALE chains where the fusion is bit-exact, and drop identity RESCALEs.

Fusing two RESCALEs in general skips the first one's rounding and saturation, which would
change results against the torch reference; so only two exact cases are rewritten:

* a widening RESCALE (int8/int16 -> int32, scale exactly 1) feeding another RESCALE: the
  first only subtracts its zero point, which the second can do itself;
* a RESCALE with scale exactly 1, equal zero points and equal types: the identity.
"""

from __future__ import annotations

from pipeline.tosa.graph import Operator, TosaGraph


def _unit_scale(graph: TosaGraph, op: Operator) -> bool:
    multipliers = graph.tensors[op.inputs[1]].data.reshape(-1)
    shifts = graph.tensors[op.inputs[2]].data.reshape(-1)
    return all(int(m) == 1 << int(s) for m, s in zip(multipliers, shifts))


def _zp(graph: TosaGraph, name: str) -> int:
    return int(graph.tensors[name].data.reshape(-1)[0])


def _is_widening(graph: TosaGraph, op: Operator) -> bool:
    src, out = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    return (
        src.dtype in ("int8", "int16")
        and out.dtype == "int32"
        and _zp(graph, op.inputs[4]) == 0
        and _unit_scale(graph, op)
    )


def _fuse_into(graph: TosaGraph, op: Operator) -> bool:
    src = op.inputs[0]
    first = graph.producer(src)
    if first is None or first.op != "RESCALE" or not _is_widening(graph, first):
        return False
    if len(graph.consumers(src)) != 1 or graph.is_graph_output(src):
        return False
    op.inputs[0], op.inputs[3] = first.inputs[0], first.inputs[3]
    op.attrs["input_unsigned"] = first.attrs["input_unsigned"]
    graph.operators.remove(first)
    return True


def _drop_identity(graph: TosaGraph, op: Operator) -> bool:
    src, out = op.inputs[0], op.outputs[0]
    if graph.tensors[src].dtype != graph.tensors[out].dtype or not _unit_scale(graph, op):
        return False
    if _zp(graph, op.inputs[3]) != _zp(graph, op.inputs[4]):
        return False
    return graph.bypass(op)


def run(graph: TosaGraph) -> None:
    graph.rewrite("RESCALE", _fuse_into, _drop_identity)
