"""How far a TOSA integer graph's values may be from the exact result of the q/dq math.

Verify compares each quantized layer on its own (``pipeline/verify/layers.py``): the
layer's inputs are the TOSA graph's own integers, so every tensor the comparison starts from is
exact. Walking the layer's TOSA operators from there gives a bound ``B`` in output steps (LSBs)
with ``|TOSA - exact| <= B``: a bit-exact layer has ``B = 0``, one rounding to nearest
``B = 0.5``. torch rounds the exact value too, so a layer may differ from torch by 1 only where
the exact value lies within ``B - 0.5`` of a half step: at rounding ties.

Per operator (bounds in the units of each tensor's own integer steps):

* data movement and selection (RESHAPE, TRANSPOSE, SLICE, CONCAT, PAD, CLAMP, MAX_POOL2D,
  MAXIMUM, ...): the largest input bound - they pick values, never compute new ones;
* exact integer arithmetic (ADD, SUB, CONV2D, MATMUL, REDUCE_SUM, MUL without shift,
  RESIZE): exact on exact inputs; otherwise the input bound times the operator's gain (the sum
  of |weights| of a convolution, the number of summed values, the resize scale). A
  convolution adds 2**-24 of its largest bias: the program's bias scale is a float32 product;
* RESCALE: the input bound times the scale, plus 0.5 for the rounding (none when the scale is
  an integer), plus the multiplier's own error, ``0.5 / multiplier`` relative, at the largest
  output magnitude - about 1 LSB for the 16-bit multipliers of int48 accumulators at int16;
* AVG_POOL2D: the input bound plus 0.5 (integer division rounds);
* int8 TABLE: entries are torch's float32 results, rounded: 0.5 (and a float32 margin), plus
  the table's steepest step per input step times the input bound;
* int16 TABLE: rounded entries interpolated 128 input steps apart: 0.5 plus twice the linear
  interpolation bound ``h**2 * |f''| / 8``, ``f''`` estimated by the second differences of the
  entries, in the int32 result's 1/128 steps - per element, from the interval its input falls
  in, when the table reads an exact tensor and one RESCALE follows (``interpolated_table``),
  else the table's worst interval. A zoomed table (its input an exact tensor times an integer,
  ``table_zoom.py``; or that tensor plus a constant, times an integer: ``table_split.py``)
  adds ``FLAT`` where the zoom saturates: the lowering checked on every input code that the
  output there is within ``FLAT`` of the table's end;
* anything else: one rounding (1 LSB) beyond its largest input bound, or unbounded when that
  input is inexact and the operator's gain is unknown.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from pipeline.tosa.flatbuffer import Block, Operator, clamp_bounds
from pipeline.tosa.functions.table_zoom import FLAT, FLOAT32_MARGIN, interpolation_bound

MOVES = frozenset({
    "RESHAPE", "TRANSPOSE", "SLICE", "CONCAT", "PAD", "IDENTITY", "CLAMP", "MAX_POOL2D",
    "MAXIMUM", "MINIMUM", "REDUCE_MAX", "REDUCE_MIN", "TILE", "REVERSE", "GATHER", "SELECT",
    "SCATTER",
})  # fmt: skip
SUMS = frozenset({"ADD", "SUB"})
WEIGHTED = frozenset({"CONV2D", "DEPTHWISE_CONV2D", "TRANSPOSE_CONV2D", "CONV3D"})
ROUNDING = {"SINGLE_ROUND": 0.5}  # anything else (double, inexact rounding): a whole LSB
# The program dequantizes an int32 bias with its own float32 scale, fl32(input * weight
# scale), which the integer accumulator takes as exact: 2**-24 relative of the bias.
BIAS_SCALE_ERROR = 2.0**-24
_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int48": 48}


class Bounds:
    """Error bounds of the tensors of ``block`` whose inputs are exact at ``boundaries``
    (the layer tensors verify substitutes, graph inputs; constants are always exact)."""

    def __init__(self, block: Block, boundaries: Iterable[str]):
        self.block = block
        self.boundaries = set(boundaries) | set(block.inputs)
        self.producer = {out: op for op in block.operators for out in op.outputs}
        self._memo: dict[str, tuple[float, frozenset[int]]] = {}
        self._index = {id(op): i for i, op in enumerate(block.operators)}

    def layer(self, tensor: str) -> tuple[float, list[str]]:
        """(bound of ``tensor``, the TOSA operators computing it from exact tensors)."""
        bound, ops = self._segment(tensor)
        return bound, [self.block.operators[i].op for i in sorted(ops)]

    def _value(self, tensor: str) -> tuple[float, frozenset[int]]:
        if tensor in self.boundaries or self._is_const(tensor):
            return 0.0, frozenset()
        return self._segment(tensor)

    def _is_const(self, tensor: str) -> bool:
        known = self.block.tensors.get(tensor)
        return known is None or known.data is not None or tensor not in self.producer

    def _segment(self, tensor: str) -> tuple[float, frozenset[int]]:
        if tensor not in self._memo:
            op = self.producer.get(tensor)
            if op is None:
                return 0.0, frozenset()
            inputs = [self._value(name) for name in op.inputs]
            ops = frozenset().union(*(o for _, o in inputs)) | {self._index[id(op)]}
            self._memo[tensor] = (self._rule(op, [b for b, _ in inputs]), ops)
        return self._memo[tensor]

    def _data(self, name: str) -> np.ndarray | None:
        return self.block.tensors[name].data

    def _rule(self, op: Operator, bounds: list[float]) -> float:
        worst = max(bounds, default=0.0)
        if op.op in MOVES or op.op in ("CONST", "CONST_SHAPE"):
            return worst
        if op.op in SUMS:
            return sum(bounds)
        if op.op == "RESCALE":
            return self._rescale(op, bounds[0])
        if op.op == "AVG_POOL2D":
            return bounds[0] + 0.5 + 2.0**-20  # its reciprocal multiplier: 2**-30 relative
        if op.op == "TABLE":
            return self._table(op, bounds[0])
        if op.op in WEIGHTED:
            bias = self._data(op.inputs[2]) if len(op.inputs) > 2 else None
            bias_error = 0.0 if bias is None else float(np.abs(bias).max(initial=0))
            return _scaled(bounds[0], self._weight_gain(op)) + bias_error * BIAS_SCALE_ERROR
        if op.op == "REDUCE_SUM":
            count = _size(self.block, op.inputs[0]) // max(1, _size(self.block, op.outputs[0]))
            return bounds[0] * count
        if op.op == "MUL":
            shift = self._data(op.inputs[2]) if len(op.inputs) > 2 else None
            rounds = shift is not None and int(np.max(shift)) > 0
            return (0.5 if rounds else 0.0) + _scaled(worst, math.inf)
        if op.op == "MATMUL":
            return _scaled(worst, math.inf)
        if op.op == "RESIZE":
            return self._resize(op, bounds[0])
        return _scaled(worst, math.inf) + 1.0  # not analysed: allow one rounding

    def _weight_gain(self, op: Operator) -> float:
        """The largest sum of |weights| of one output channel (inf: weights not constant)."""
        weights = self._data(op.inputs[1])
        if weights is None:
            return math.inf
        weights = np.abs(weights.astype(np.float64))
        if op.op == "DEPTHWISE_CONV2D":  # [KH, KW, C, M]: output channels are C * M
            return float(weights.reshape(-1, weights.shape[2] * weights.shape[3]).sum(0).max())
        return float(weights.reshape(weights.shape[0], -1).sum(1).max())  # [OC, ..., IC]

    def _rescale(self, op: Operator, bound: float) -> float:
        multipliers = self._data(op.inputs[1]).reshape(-1).astype(np.float64)
        shifts = self._data(op.inputs[2]).reshape(-1).astype(np.float64)
        scales = multipliers * 2.0**-shifts
        if np.all(scales == np.round(scales)):  # an integer scale: exact
            return bound * float(scales.max())
        out = self.block.tensors[op.outputs[0]]
        zero_point = int(self._data(op.inputs[4]).reshape(-1)[0])
        magnitude = 2.0 ** (_INT_BITS.get(out.dtype, 32) - 1) + abs(zero_point)
        multiplier_error = float(np.max(0.5 / np.maximum(multipliers, 1.0))) * magnitude
        rounding = ROUNDING.get(op.attrs.get("rounding_mode", ""), 1.0)
        return bound * float(scales.max()) + rounding + multiplier_error

    def _table(self, op: Operator, bound: float) -> float:
        table = self._data(op.inputs[1]).reshape(-1).astype(np.int64)
        steps = np.abs(np.diff(table)) if table.size > 1 else np.zeros(1)
        if self.block.tensors[op.inputs[0]].dtype == "int8":
            return 0.5 + FLOAT32_MARGIN + float(steps.max()) * bound
        # int16: an int32 result in 1/128 steps of the entries; the table's worst interval
        low, high = self._reach(op.inputs[0])
        starts = np.arange(-32768, 32768, 128)
        reached = starts[(starts + 127 >= low) & (starts <= high)]
        entry_bound = float(interpolation_bound(table, reached).max())
        flat = FLAT if self._zoom(op.inputs[0]) is not None else 0.0
        return 128 * (entry_bound + flat) + float(steps.max()) * bound

    def interpolated_table(self, tensor: str) -> Interpolated | None:
        """For ``tensor`` = RESCALE(int16 TABLE(exact input)), the input maybe zoomed by an
        integer RESCALE (``pipeline/tosa/functions/table_zoom.py``): its interpolation error depends on
        where each input falls (``Interpolated.bound``), far tighter than the table-wide
        bound."""
        rescale = self.producer.get(tensor)
        if rescale is None or rescale.op != "RESCALE":
            return None
        table = self.producer.get(rescale.inputs[0])
        if table is None or table.op != "TABLE" or self._value(table.inputs[0])[0] != 0:
            return None
        if self.block.tensors[table.inputs[0]].dtype != "int16":
            return None
        source, zoom = table.inputs[0], self._zoom(table.inputs[0])
        if zoom is not None and zoom[2] != 0:  # an offset: Interpolated has none
            return None
        if zoom is not None:
            source, zoom = zoom[0], zoom[1]
        entries = self._data(table.inputs[1]).reshape(-1)
        scale = _scales(self._data(rescale.inputs[1]), self._data(rescale.inputs[2])).max()
        return Interpolated(source, entries, float(scale), self._rescale(rescale, 0.0), zoom or 1)

    def _reach(self, tensor: str) -> tuple[int, int]:
        """The int16 codes ``tensor`` can hold, from the CLAMPs and zooms that produce it
        (a TABLE's intervals outside them do not count: ``table_split.py``)."""
        op = self.producer.get(tensor)
        zoom = self._zoom(tensor)
        if zoom is not None:
            source, k, c = zoom
            low, high = self._reach(source)
            low, high = np.clip([k * (low + c), k * (high + c)], -32768, 32767)
            return int(low), int(high)
        bounds = clamp_bounds(op, "int16") if op is not None and op.op == "CLAMP" else None
        if bounds is None:
            return -32768, 32767
        low, high = self._reach(op.inputs[0])
        return max(low, bounds[0]), min(high, bounds[1])

    def _zoom(self, tensor: str) -> tuple[str, int, int] | None:
        """``(source, k, c)`` when the TABLE input ``tensor`` is ``k * (source + c)``,
        saturated to int16, for an exact int16 ``source``: an int16 -> int16 RESCALE by an
        integer ``k`` (``c = 0``: ``table_zoom.py``), or a RESCALE by ``k`` to int16 of
        ADD(an int16 -> int32 RESCALE by 1 of ``source``, a one-element constant ``c``)
        (``table_split.py``'s split above a code); else None."""
        op = self.producer.get(tensor)
        k = self._integer_scale(op)
        if k is None:
            return None
        source = op.inputs[0]
        if self.block.tensors[source].dtype == "int16":
            return (source, k, 0) if self._value(source)[0] == 0 else None
        add = self.producer.get(source)
        widen = self.producer.get(add.inputs[0]) if add is not None and add.op == "ADD" else None
        if self._integer_scale(widen) != 1:
            return None
        offset, source = self._data(add.inputs[1]), widen.inputs[0]
        if offset is None or offset.size != 1 or self.block.tensors[source].dtype != "int16":
            return None
        return (source, k, int(offset.reshape(-1)[0])) if self._value(source)[0] == 0 else None

    def _integer_scale(self, op: Operator | None) -> int | None:
        """The scale of a RESCALE by one integer, zero points 0 (exact but for saturation)."""
        if op is None or op.op != "RESCALE":
            return None
        scales = _scales(self._data(op.inputs[1]), self._data(op.inputs[2]))
        zero_points = (self._data(op.inputs[3]), self._data(op.inputs[4]))
        if scales.size != 1 or scales[0] != round(scales[0]) or any(np.any(z) for z in zero_points):
            return None
        return int(scales[0])

    def _resize(self, op: Operator, bound: float) -> float:
        if op.attrs.get("mode") == "NEAREST":
            return bound
        scale = self._data(op.inputs[1])
        if scale is None:
            return _scaled(bound, math.inf)
        y_n, _, x_n, _ = (int(v) for v in scale.reshape(-1)[:4])
        return bound * y_n * x_n


@dataclass(frozen=True)
class Interpolated:
    """An int16 TABLE whose input is ``source`` (an exact tensor), times ``zoom``, and the
    RESCALE after it: ``scale``, and ``rest``, its own bound."""

    source: str
    entries: np.ndarray
    scale: float
    rest: float
    zoom: int = 1

    def bound(self, values: np.ndarray) -> np.ndarray:
        """The bound of each result, in output steps, for ``source``'s ``values``: a zoomed
        code that saturates reads the table's end, which the lowering placed within
        ``FLAT`` of the code's exact output."""
        wide = values.astype(np.int64) * self.zoom
        inputs = np.clip(wide, -32768, 32767)
        flat = np.where(wide != inputs, FLAT, 0.0)
        return 128 * (interpolation_bound(self.entries, inputs) + flat) * self.scale + self.rest


def _scales(multipliers: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    return multipliers.reshape(-1).astype(np.float64) * 2.0 ** -shifts.reshape(-1)


def _scaled(bound: float, gain: float) -> float:
    """``bound * gain`` with 0 * inf = 0: an exact input stays exact whatever the gain."""
    return 0.0 if bound == 0 else bound * gain


def _size(block: Block, name: str) -> int:
    return int(np.prod(block.tensors[name].shape, dtype=np.int64))


def tolerance(bound: float) -> int | None:
    """The largest integer difference from torch's rounding that ``bound`` permits (None when
    unbounded): 0 for a bit-exact layer, 1 for one rounding."""
    if bound == 0:
        return 0
    return None if math.isinf(bound) else math.floor(bound + 0.5 + 1e-9)
