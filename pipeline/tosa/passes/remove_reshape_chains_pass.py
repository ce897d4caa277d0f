"""Collapse RESHAPE chains and drop RESHAPEs that change nothing.

Visitors reshape locally (``linear`` makes its input [N, 1, 1, C] and its output [N, C]),
so back-to-back layers leave chains like [1, 1, 1, 32] -> [1, 32] -> [1, 1, 1, 32]. A chain
of reshapes is one reshape to the last shape; a reshape to the same shape is none.
"""

from __future__ import annotations

from pipeline.tosa.graph import Operator, TosaGraph


def _bypass(graph: TosaGraph, op: Operator) -> bool:
    """Remove a RESHAPE to the same shape, rewiring its readers; False if it must stay."""
    src, out = op.inputs[0], op.outputs[0]
    return graph.tensors[src].shape == graph.tensors[out].shape and graph.bypass(op)


def _merge_with_producer(graph: TosaGraph, op: Operator) -> bool:
    """RESHAPE(RESHAPE(x)) -> RESHAPE(x) when the inner result has no other reader."""
    src = op.inputs[0]
    inner = graph.producer(src)
    if inner is None or inner.op != "RESHAPE":
        return False
    if len(graph.consumers(src)) != 1 or graph.is_graph_output(src):
        return False
    op.inputs[0] = inner.inputs[0]
    graph.operators.remove(inner)
    return True


def run(graph: TosaGraph) -> None:
    graph.rewrite("RESHAPE", _merge_with_producer, _bypass)
