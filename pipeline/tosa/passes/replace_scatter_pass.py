"""Ethos-U55/U65: a SCATTER with constant indices becomes a GATHER with constant indices.

Vela 5.2 places no SCATTER on Ethos-U55/U65. ``SCATTER(values_in [N, K, C], indices [N, W],
input [N, W, C])`` writes row ``w`` of ``input`` over row ``indices[n, w]``; with constant
indices every output row is known to come from one row of ``CONCAT(values_in, input)``
along ``K``: row ``K + w`` where it is written, else its own. So it is a GATHER of that
concatenation at constant rows, which ``replace_gather_pass`` (after this one) turns into a
one-hot product - bit for bit, only rows move - or, when Vela's estimates say it is cheaper
there, SLICEs of both tensors' runs and a CONCAT. The lowering emits SCATTER for constant
indices only when they fall in many runs (else SLICEs and a CONCAT already); indices
computed at run time stay a SCATTER, which the pre-Vela check names.
"""

from __future__ import annotations

import numpy as np

from pipeline.tosa.graph import Operator, TosaGraph
from pipeline.tosa.passes import int_ops, replace_gather_pass


def _replace(graph: TosaGraph, op: Operator) -> bool:
    values_in, indices, values = (graph.tensors[n] for n in op.inputs)
    if indices.data is None:
        return False
    n, k, c = values_in.shape
    w = values.shape[1]
    rows = np.tile(np.arange(k), (n, 1))
    for b in range(n):
        rows[b, indices.data[b].astype(np.int64)] = k + np.arange(w)
    picked = rows[0]
    itemsize = 2 if values_in.dtype == "int16" else 1
    same = (rows == rows[:1]).all()
    if same and replace_gather_pass.pieces_cheaper(n, k + w, c, picked, itemsize):
        result = replace_gather_pass.pieces(graph, op, [values_in.name, values.name], picked)
        int_ops.reshape(graph, op, result, (n, k, c), f"{op.outputs[0]}_placed", out=op.outputs[0])
        graph.operators.remove(op)
        return True
    both = graph.add_tensor(f"{op.outputs[0]}_rows_and_values", (n, k + w, c), values_in.dtype)
    graph.insert_before(op, "CONCAT", [values_in.name, values.name], both, axis=1)
    picked = int_ops.const(graph, f"{op.outputs[0]}_rows", rows, "int32")
    graph.insert_before(op, "GATHER", [both, picked], op.outputs[0])
    graph.operators.remove(op)
    return True


def run(graph: TosaGraph) -> None:
    graph.rewrite("SCATTER", _replace)
