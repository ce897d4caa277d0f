"""Remove operators whose results nothing reads (no later operator, no graph output).

A visitor may read through a value another visitor already lowered (gather reads the index
before an expand, not the expand's TILE); the unread operator would still cost the NPU a
pass. TOSA inference operators have no side effects, so an unread one can always go.
"""

from __future__ import annotations

from pipeline.tosa.graph import TosaGraph


def run(graph: TosaGraph) -> None:
    read = set(graph.outputs)
    kept = []
    for operator in reversed(graph.operators):
        if any(out in read for out in operator.outputs):
            read.update(operator.inputs)
            kept.append(operator)
    graph.operators = kept[::-1]
    graph.remove_unused_tensors()
