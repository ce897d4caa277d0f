"""Ethos-U55/U65: a GATHER (an embedding lookup) becomes a one-hot matrix product.

Vela 5.2 places no GATHER on Ethos-U55/U65. ``GATHER(values [N, K, C], indices [N, W])``
picks row ``indices[n, w]``: that is ``one_hot [N, W, K] @ values``, whose sums have exactly
one non-zero term, the looked-up int8 value - so an int32 accumulator RESCALEd by 1 back to
int8 gives the GATHER's integers bit for bit (for every index in range; GATHER has no result
for the others).

The one-hot is built with operators U55 runs: ``d = indices - column`` RESCALEd by 1 to int8
(saturating: zero stays zero, any other value stays non-zero) and a TABLE mapping 0 to 1 and
everything else to 0. ``d`` is a 1x1 CONV2D of the ids as int16 (weights 1, bias ``-column``;
every valid index of a table up to 32768 rows fits), else an int32 SUB against a constant
``[0, K)``, which Vela broadcasts at about twice the cost. A constant table (the
embedding, ``N == 1``) is the weights of a 1x1 CONV2D over that one-hot, which Vela streams
and compresses like any other weights; a table computed at run time is the second input of
a MATMUL. Constant indices make the one-hot a constant; constant values and indices make
the whole result one. Vela 5.2, ethos-u55-128, 32 ids into a 1000 x 64 int8 table: 54,048
NPU cycles (with the SUB form of ``d``: 104,600), most of it the table's single read from
flash as weights; an int16 table 81,632 (Ethos-U85-256 runs the native GATHER: 24,999).

An int16 table (``a16w8``) is two int8 ones - high bytes and low bytes - in two CONV2Ds,
``256 * high + low`` in int32. Left alone: int16 values computed at run time (U55 has no
int16 MATMUL) and int32 ones.
"""

from __future__ import annotations

import numpy as np

from pipeline.tosa.graph import Operator, TosaGraph
from pipeline.tosa.passes import int_ops

INT16_LIMIT = 32768  # tables up to this many rows: every valid index fits int16


def _one_hot_table() -> np.ndarray:
    """TABLE entries for int8 inputs -128..127: 1 at 0, else 0."""
    table = np.zeros(256, np.int8)
    table[128] = 1
    return table


def _differences(graph: TosaGraph, op: Operator, ids: str, k: int, hint: str) -> str:
    """int8 ``[1, 1, M, K]``: ``ids - column`` (int32 ``[1, 1, M, 1]``), saturated."""
    m = graph.tensors[ids].shape[2]
    if k > INT16_LIMIT or not graph.spec.supports_dtype("int16"):
        iota = int_ops.const(graph, f"{hint}_iota", np.arange(k).reshape(1, 1, 1, k), "int32")
        diff = int_ops.binary(graph, op, "SUB", ids, iota, f"{hint}_diff")
        return int_ops.rescale(graph, op, diff, "int8", f"{hint}_diff8")
    # Cheaper on U55 than an int32 broadcast SUB: a 1x1 CONV2D of the ids (int16: every
    # valid one fits) with K output channels, weights 1 and bias -column.
    ids16 = int_ops.rescale(graph, op, ids, "int16", f"{hint}_ids16")
    diff = graph.add_tensor(f"{hint}_diff", (1, 1, m, k), "int48")
    inputs = [
        ids16,
        int_ops.const(graph, f"{hint}_ones", np.ones((k, 1, 1, 1), np.int8), "int8"),
        int_ops.const(graph, f"{hint}_columns", -np.arange(k, dtype=np.int64), "int48"),
        int_ops.const(graph, f"{hint}_ids_zp", [0], "int16"),
        int_ops.const(graph, f"{hint}_ones_zp", [0], "int8"),
    ]
    graph.insert_before(op, "CONV2D", inputs, diff, pad=[0, 0, 0, 0], stride=[1, 1],
                        dilation=[1, 1], local_bound=False, acc_type="int48")  # fmt: skip
    return int_ops.rescale(graph, op, diff, "int8", f"{hint}_diff8")


def _one_hot(graph: TosaGraph, op: Operator, indices: str, k: int, shape: tuple, hint: str):
    """int8 ``[*shape, K]`` with a 1 where the index equals the column."""
    data = graph.tensors[indices].data
    if data is not None:
        one_hot = (data.reshape(*shape, 1) == np.arange(k)).astype(np.int8)
        return int_ops.const(graph, f"{hint}_one_hot", one_hot, "int8")
    m = int(np.prod(shape))
    column = int_ops.reshape(graph, op, indices, (1, 1, m, 1), f"{hint}_ids")
    narrow = _differences(graph, op, column, k, hint)
    flat = graph.add_tensor(f"{hint}_one_hot", (1, 1, m, k), "int8")
    table = int_ops.const(graph, f"{hint}_one_hot_table", _one_hot_table(), "int8")
    graph.insert_before(op, "TABLE", [narrow, table], flat)
    if tuple(shape) == (1, 1, m):
        return flat
    return int_ops.reshape(graph, op, flat, (*shape, k), f"{hint}_one_hot_rows")


def _conv(graph: TosaGraph, op: Operator, one_hot: str, values: np.ndarray, hint: str,
          bias: int = 0) -> str:
    """1x1 CONV2D of one-hot ``[1, 1, W, K]`` with the int8 table ``[K, C]`` as weights."""
    _, _, w, k = graph.tensors[one_hot].shape
    c = values.shape[-1]
    out = graph.add_tensor(f"{hint}_rows32", (1, 1, w, c), "int32")
    inputs = [
        one_hot,
        int_ops.const(graph, f"{hint}_weights", values.reshape(k, c).T.reshape(c, 1, 1, k), "int8"),
        int_ops.const(graph, f"{hint}_bias", np.full(c, bias, np.int64), "int32"),
        int_ops.const(graph, f"{hint}_input_zp", [0], "int8"),
        int_ops.const(graph, f"{hint}_weight_zp", [0], "int8"),
    ]
    return graph.insert_before(op, "CONV2D", inputs, out, pad=[0, 0, 0, 0], stride=[1, 1],
                               dilation=[1, 1], local_bound=False, acc_type="int32")  # fmt: skip


def _conv16(graph: TosaGraph, op: Operator, one_hot: str, values: np.ndarray, hint: str) -> str:
    """An int16 table as two int8 ones, ``t = 256 * (t >> 8) + (t & 255)``: the low bytes
    stored minus 128 and given back by the bias (one row per sum)."""
    values = values.astype(np.int32)
    high = _conv(graph, op, one_hot, (values >> 8).astype(np.int8), f"{hint}_high")
    low = _conv(graph, op, one_hot, ((values & 255) - 128).astype(np.int8), f"{hint}_low", 128)
    rank = len(graph.tensors[high].shape)
    scaled = int_ops.binary(graph, op, "MUL", high, int_ops.scalar(graph, f"{hint}_256", 256, rank),
                            f"{hint}_high256")  # fmt: skip
    return int_ops.binary(graph, op, "ADD", scaled, low, f"{hint}_rows32")


def _matmul(graph: TosaGraph, op: Operator, one_hot: str, values: str, hint: str) -> str:
    n, w, _ = graph.tensors[one_hot].shape
    c = graph.tensors[values].shape[-1]
    out = graph.add_tensor(f"{hint}_rows32", (n, w, c), "int32")
    zero_points = [int_ops.const(graph, f"{hint}_{s}_zp", [0], "int8") for s in ("a", "b")]
    return graph.insert_before(op, "MATMUL", [one_hot, values, *zero_points], out)


def _replace(graph: TosaGraph, op: Operator) -> bool:
    values, indices = (graph.tensors[n] for n in op.inputs)
    out = op.outputs[0]
    if values.dtype not in ("int8", "int16") or (values.dtype == "int16" and not (
            values.is_const and values.shape[0] == 1)):  # fmt: skip
        return False
    n, k, c = values.shape
    w = indices.shape[1]
    if values.is_const and indices.is_const and not graph.is_graph_output(out):
        rows = np.take_along_axis(values.data, indices.data[..., None].astype(np.int64), axis=1)
        graph.replace_uses(out, int_ops.const(graph, f"{out}_rows", rows, values.dtype))
        graph.operators.remove(op)
        return True
    if values.is_const and n == 1:
        one_hot = _one_hot(graph, op, indices.name, k, (1, 1, w), out)
        conv = _conv16 if values.dtype == "int16" else _conv
        rows = conv(graph, op, one_hot, values.data, out)
    else:
        one_hot = _one_hot(graph, op, indices.name, k, (n, w), out)
        rows = _matmul(graph, op, one_hot, values.name, out)
    narrow = int_ops.rescale(graph, op, rows, values.dtype, f"{out}_rows_narrow")
    int_ops.reshape(graph, op, narrow, (n, w, c), f"{out}_reshape", out=out)
    graph.operators.remove(op)
    return True


def run(graph: TosaGraph) -> None:
    graph.rewrite("GATHER", _replace)
