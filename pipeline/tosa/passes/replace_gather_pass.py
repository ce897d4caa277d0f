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
``256 * high + low`` in int32; int16 values computed at run time are split the same way at
run time (U55 has no int16 MATMUL: two int8 ones, ``_matmul16``). Left alone: int32 values.

Constant indices into values computed at run time (``x[:, [5, 0, 3]]``, a flip, a roll, an
unfold) flip the roles: the one-hot is the constant, the weights of a 1x1 CONV2D over the
values with the looked-up axis as channels (int16 too, one term per sum), or - when Vela's
estimates say so (``pieces_cheaper``) - SLICEs of the rows' runs and a CONCAT.
"""

from __future__ import annotations

import numpy as np

from pipeline.tosa.graph import Operator, TosaGraph
from pipeline.tosa.emit import movement
from pipeline.tosa.passes import int_ops
from pipeline.tosa.quant_math import encode_scale

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


def _scaled(graph: TosaGraph, op: Operator, x: str, scale: float, dtype: str, hint: str) -> str:
    """RESCALE of int32 ``x`` by a power of two into ``dtype`` (rounding half up)."""
    multiplier, shift = encode_scale(scale, 32)
    out = graph.add_tensor(hint, graph.tensors[x].shape, dtype)
    inputs = [
        x,
        graph.add_const(f"{hint}_multiplier", [multiplier], "int32"),
        graph.add_const(f"{hint}_shift", [shift], "int8"),
        graph.add_const(f"{hint}_input_zp", [0], "int32"),
        graph.add_const(f"{hint}_output_zp", [0], dtype),
    ]
    return graph.insert_before(op, "RESCALE", inputs, out, scale32=True,
                               rounding_mode=graph.spec.rounding_mode, per_channel=False,
                               input_unsigned=False, output_unsigned=False)  # fmt: skip


def _matmul16(graph: TosaGraph, op: Operator, one_hot: str, values: str, hint: str) -> str:
    """Rows of int16 values computed at run time (Ethos-U55 has no int16 MATMUL): ``v = 256 *
    h + l`` with ``h = floor(v / 256)`` (a RESCALE of ``v - 128`` by 1/256, rounding half up)
    and ``l - 128`` in int8, two int8 MATMULs, ``256 * rows(h) + rows(l - 128) + 128``."""
    wide = int_ops.widen(graph, op, values, f"{hint}_wide")
    rank = len(graph.tensors[values].shape)
    centred = int_ops.binary(graph, op, "SUB", wide, int_ops.scalar(graph, f"{hint}_128", 128,
                             rank), f"{hint}_centred")  # fmt: skip
    high = _scaled(graph, op, centred, 1 / 256, "int8", f"{hint}_high")
    high256 = int_ops.binary(graph, op, "MUL", int_ops.widen(graph, op, high, f"{hint}_high32"),
                             int_ops.scalar(graph, f"{hint}_256", 256, rank), f"{hint}_high256")
    low = int_ops.binary(graph, op, "SUB", wide, high256, f"{hint}_low32")
    low8 = int_ops.rescale(graph, op, low, "int8", f"{hint}_low", out_zp=-128)
    rows_high = _matmul(graph, op, one_hot, high, f"{hint}_high")
    rows_low = _matmul(graph, op, one_hot, low8, f"{hint}_low")
    scaled = int_ops.binary(graph, op, "MUL", rows_high, int_ops.scalar(
        graph, f"{hint}_rows_256", 256, rank), f"{hint}_rows_high256")  # fmt: skip
    summed = int_ops.binary(graph, op, "ADD", scaled, rows_low, f"{hint}_rows_sum")
    return int_ops.binary(graph, op, "ADD", summed, int_ops.scalar(
        graph, f"{hint}_rows_128", 128, rank), f"{hint}_rows32")  # fmt: skip


def _transpose(graph: TosaGraph, op: Operator, x: str, hint: str) -> str:
    """``[N, A, B]`` -> ``[N, B, A]`` (a RESHAPE when either is 1)."""
    n, a, b = graph.tensors[x].shape
    if a == 1 or b == 1:
        return int_ops.reshape(graph, op, x, (n, b, a), hint)
    out = graph.add_tensor(hint, (n, b, a), graph.tensors[x].dtype)
    return graph.insert_before(op, "TRANSPOSE", [x], out, perms=[0, 2, 1])


def _picked_by_weights(graph: TosaGraph, op: Operator, values: str, rows: np.ndarray) -> str:
    """Constant rows of values computed at run time: the one-hot is the constant, so it is the
    weights of a 1x1 CONV2D over the values with ``K`` as channels (int8, or int16 with an
    int48 sum; one term per sum) - ``[N, W, C]`` in the values' type."""
    n, k, c = graph.tensors[values].shape
    w, dtype, out = rows.size, graph.tensors[values].dtype, op.outputs[0]
    acc = "int48" if dtype == "int16" else "int32"
    columns = int_ops.reshape(graph, op, _transpose(graph, op, values, f"{out}_by_rows"),
                              (1, n, c, k), f"{out}_columns")  # fmt: skip
    summed = graph.add_tensor(f"{out}_rows_acc", (1, n, c, w), acc)
    inputs = [
        columns,
        int_ops.const(graph, f"{out}_one_hot", (rows[:, None] == np.arange(k)).astype(np.int8)
                      .reshape(w, 1, 1, k), "int8"),
        int_ops.const(graph, f"{out}_bias", np.zeros(w, np.int64), acc),
        int_ops.const(graph, f"{out}_input_zp", [0], dtype),
        int_ops.const(graph, f"{out}_weight_zp", [0], "int8"),
    ]  # fmt: skip
    graph.insert_before(op, "CONV2D", inputs, summed, pad=[0, 0, 0, 0], stride=[1, 1],
                        dilation=[1, 1], local_bound=False, acc_type=acc)  # fmt: skip
    narrow = int_ops.rescale(graph, op, summed, dtype, f"{out}_rows_narrow")
    by_columns = int_ops.reshape(graph, op, narrow, (n, c, w), f"{out}_by_columns")
    return _transpose(graph, op, by_columns, f"{out}_picked")


def pieces_cheaper(n: int, k: int, c: int, rows: np.ndarray, itemsize: int) -> bool:
    """Whether SLICEs and a CONCAT of the rows' runs beat the one-hot CONV2D on Ethos-U55.
    Vela 5.2's estimates on ethos-u55-128 (row picks and rolls of 3..800 rows of 1..64
    bytes) fit a SLICE or CONCAT as 100 cycles plus one per byte, the CONV2D as its MACs / 64
    plus a third of a cycle per byte TRANSPOSEd: a 100-row roll of 1x257x64 is 17,088 cycles
    as two SLICEs and a CONCAT, 48,608 as a CONV2D; a 2-row roll of 2x6x3 288 against 250."""
    pieces = len(movement.runs(rows.tolist()))
    if pieces > movement.MAX_RUNS:
        return False
    moved = n * rows.size * c * itemsize
    weights = n * c * k * rows.size * itemsize / 64 + (n * (k + rows.size) * c * itemsize / 3
                                                        if c > 1 else 0)  # fmt: skip
    return 100 * (pieces + 1) + moved < weights


def pieces(graph: TosaGraph, op: Operator, tables: list[str], rows: np.ndarray) -> str:
    """SLICEs of the rows' consecutive runs and a CONCAT: rows of ``tables`` (``[N, K_i, C]``)
    numbered as if concatenated along K (rows as channels when ``C == 1``)."""
    n, _, c = graph.tensors[tables[0]].shape
    dtype, out = graph.tensors[tables[0]].dtype, op.outputs[0]
    flat = [int_ops.reshape(graph, op, t, graph.tensors[t].shape[:2], f"{out}_table")
            if c == 1 else t for t in tables]  # fmt: skip
    offsets = np.cumsum([0] + [graph.tensors[t].shape[1] for t in tables])
    found: list[list[int]] = []  # [table, first row, rows]; a run stops at a table's end
    for row in rows.tolist():
        t = int(np.searchsorted(offsets, row, side="right")) - 1
        local = row - int(offsets[t])
        if found and found[-1][0] == t and found[-1][1] + found[-1][2] == local:
            found[-1][2] += 1
        else:
            found.append([t, local, 1])
    parts = []
    for i, (t, start, size) in enumerate(found):
        shape = graph.tensors[flat[t]].shape
        piece_shape = (n, size, *shape[2:])
        piece = graph.add_tensor(f"{out}_run{i}", piece_shape, dtype)
        begin = int_ops.const(graph, f"{out}_run{i}_start", [0, start] + [0] * (len(shape) - 2),
                              "shape")  # fmt: skip
        extent = int_ops.const(graph, f"{out}_run{i}_size", list(piece_shape), "shape")
        parts.append(graph.insert_before(op, "SLICE", [flat[t], begin, extent], piece))
    if len(parts) == 1:
        return parts[0]
    joined = graph.add_tensor(f"{out}_runs", (n, rows.size, *graph.tensors[flat[0]].shape[2:]),
                              dtype)  # fmt: skip
    return graph.insert_before(op, "CONCAT", parts, joined, axis=1)


def _replace(graph: TosaGraph, op: Operator) -> bool:
    values, indices = (graph.tensors[n] for n in op.inputs)
    out = op.outputs[0]
    if values.dtype not in ("int8", "int16"):
        return False
    n, k, c = values.shape
    w = indices.shape[1]
    if indices.is_const and not values.is_const and (indices.data == indices.data[:1]).all():
        picked = indices.data[0].astype(np.int64)
        if pieces_cheaper(n, k, c, picked, 2 if values.dtype == "int16" else 1):
            rows = pieces(graph, op, [values.name], picked)
        else:
            rows = _picked_by_weights(graph, op, values.name, picked)
        int_ops.reshape(graph, op, rows, (n, w, c), f"{out}_reshape", out=out)
        graph.operators.remove(op)
        return True
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
        matmul = _matmul16 if values.dtype == "int16" else _matmul
        rows = matmul(graph, op, one_hot, values.name, out)
    narrow = int_ops.rescale(graph, op, rows, values.dtype, f"{out}_rows_narrow")
    int_ops.reshape(graph, op, narrow, (n, w, c), f"{out}_reshape", out=out)
    graph.operators.remove(op)
    return True


def run(graph: TosaGraph) -> None:
    graph.rewrite("GATHER", _replace)
