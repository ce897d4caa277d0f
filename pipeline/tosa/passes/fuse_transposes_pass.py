"""TRANSPOSE(TRANSPOSE(x)) -> one TRANSPOSE, or none when the two cancel.

Visitors put values in torch's order for a matmul or a reshape and back into a 4-D value's
NHWC order afterwards, each with its own TRANSPOSE; back-to-back ones compose exactly
(``out[j] = in[p1[p2[j]]]``), so only data movement changes, never values.
"""

from __future__ import annotations

from pipeline.tosa.graph import Operator, TosaGraph


def _fuse(graph: TosaGraph, op: Operator) -> bool:
    inner = graph.producer(op.inputs[0])
    if inner is None or inner.op != "TRANSPOSE":
        return False
    middle = inner.outputs[0]
    if len(graph.consumers(middle)) != 1 or graph.is_graph_output(middle):
        return False
    perm = [inner.attrs["perms"][j] for j in op.attrs["perms"]]
    graph.operators.remove(inner)
    op.inputs[0] = inner.inputs[0]
    op.attrs["perms"] = perm
    if perm == sorted(perm):  # the pair cancels out
        graph.bypass(op)
    return True


def run(graph: TosaGraph) -> None:
    graph.rewrite("TRANSPOSE", _fuse)
