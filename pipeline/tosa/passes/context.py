"""What every FX pass receives besides the graph module."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.tosa.spec import TosaSpec


@dataclass(frozen=True)
class PassContext:
    spec: TosaSpec
    where: str = ""


def const_node(gm, name: str, value, anchor=None):
    """A new constant FX value (a placeholder carrying ``meta["const"]``) named after ``name``."""
    graph = gm.graph
    first = anchor or next(iter(graph.nodes))
    with graph.inserting_before(first):
        node = graph.placeholder(name)
    node.meta["const"] = value
    node.meta["val"] = value
    return node
