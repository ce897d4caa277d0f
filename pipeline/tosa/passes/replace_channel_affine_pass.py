"""Ethos-U55/U65: a per-channel multiply or add of an int8 tensor by a constant becomes one
depthwise 1x1 convolution, its multiplier the weight, its addend the bias.

A BatchNorm that follows no convolution (after a residual add), a layer scale
(``x * gamma``) or ``x * gamma + beta`` per channel lowers to a RESCALE widening the input, an
int32 MUL or ADD with a ``[1, 1, 1, C]`` constant and a RESCALE back to int8. On Ethos-U55
Vela reads a broadcast constant operand from the memory that holds constants for every
element (8 bytes per element from flash on the default system config): 301,056 cycles for a
48-channel 28x28 map, where a depthwise 1x1 convolution reads its weights once and costs
about 20,000 (Vela 5.2, ``docs/search.md``). On Ethos-U85 the MUL costs 18,816 with the ADD
fused into it, so the rewrite runs in the U55/U65 variant only, and from ``MIN_ELEMENTS`` elements: Ethos-U65
compiles the same variant, and on small maps it is faster with the MUL and ADD.

Bit-exact, or not applied: the three operators are a function of each channel's 256 input
codes, so the pass computes that function (TOSA's RESCALE, MUL and ADD in numpy), picks an
int8 weight, an int32 bias and a per-channel RESCALE whose line through it matches, and
checks all 256 codes of every channel; a channel with no match leaves the graph as it was.
"""

from __future__ import annotations

import numpy as np

from pipeline.tosa.graph import Operator, TosaGraph
from pipeline.tosa.quant_math import apply_scale, encode_scale

CODES = np.arange(-128, 128, dtype=np.int64)  # every int8 input
# Smaller maps stay: Ethos-U65 compiles this variant too, and there the depthwise form lost up
# to 26 % below this many elements (4x4x64 to 8x8x64) and won from it (docs/search.md); on
# Ethos-U55 it won at every size measured.
MIN_ELEMENTS = 4608
_RANGES = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-(2**31), 2**31 - 1)}


def _data(graph: TosaGraph, name: str) -> np.ndarray:
    return np.asarray(graph.tensors[name].data, dtype=np.int64)


def _zp(graph: TosaGraph, name: str) -> int:
    return int(_data(graph, name).reshape(-1)[0])


def _rescale(graph: TosaGraph, op: Operator, value: np.ndarray) -> np.ndarray:
    """TOSA RESCALE of ``value`` (int64, channels last) as ``op`` does it."""
    multiplier, shift = (_data(graph, n).reshape(-1) for n in op.inputs[1:3])
    double = op.attrs.get("rounding_mode") == "DOUBLE_ROUND"
    scaled = np.empty(np.broadcast_shapes(value.shape, multiplier.shape), dtype=np.int64)
    value = np.broadcast_to(value, scaled.shape)
    for i, (m, s) in enumerate(zip(multiplier, shift)):  # one or one per channel
        part = (..., i) if len(multiplier) > 1 else ...
        scaled[part] = apply_scale(value[part] - _zp(graph, op.inputs[3]), int(m), int(s), double)
    low, high = _RANGES[graph.tensors[op.outputs[0]].dtype]
    return np.clip(scaled + _zp(graph, op.inputs[4]), low, high)


def _constant(graph: TosaGraph, name: str) -> np.ndarray | None:
    """The values of ``name`` when it is a constant or RESHAPEs/RESCALEs of one."""
    tensor = graph.tensors[name]
    if tensor.is_const:
        return np.asarray(tensor.data, dtype=np.int64).reshape(tensor.shape)
    op = graph.producer(name)
    if op is None or op.op not in ("RESHAPE", "RESCALE"):
        return None
    source = _constant(graph, op.inputs[0])
    if source is None:
        return None
    if op.op == "RESHAPE":
        return source.reshape(tensor.shape)
    if op.attrs.get("input_unsigned") or op.attrs.get("output_unsigned"):
        return None
    return _rescale(graph, op, source)


def _match(graph: TosaGraph, op: Operator):
    """(input, widening RESCALE, per-channel constant, narrowing RESCALE) when ``op`` (int32
    MUL or ADD) is a per-channel affine of an int8 NHWC tensor; else None."""
    out = op.outputs[0]
    readers = graph.consumers(out)
    if len(readers) != 1 or readers[0].op != "RESCALE" or graph.is_graph_output(out):
        return None
    narrow = readers[0]
    if graph.tensors[narrow.outputs[0]].dtype not in ("int8", "int16") or narrow.attrs.get(
            "per_channel") or narrow.attrs.get("output_unsigned"):
        return None
    for wide, other in ((op.inputs[0], op.inputs[1]), (op.inputs[1], op.inputs[0])):
        widen = graph.producer(wide)
        if widen is None or widen.op != "RESCALE" or widen.attrs.get("per_channel"):
            continue
        x = graph.tensors[widen.inputs[0]]
        if x.is_const or x.dtype != "int8" or len(x.shape) != 4 or x.shape[-1] < 2:
            continue
        if int(np.prod(x.shape)) < MIN_ELEMENTS:
            continue
        if widen.attrs.get("input_unsigned") or len(graph.consumers(wide)) != 1:
            continue
        constant = _constant(graph, other)
        channels = x.shape[-1]
        if constant is None or constant.shape != (1, 1, 1, channels):
            continue
        if op.op == "MUL" and int(_data(graph, op.inputs[2]).reshape(-1)[0]) != 0:
            return None
        return x.name, widen, constant.reshape(-1), narrow
    return None


def _table(graph: TosaGraph, op: Operator, widen: Operator, constant: np.ndarray,
           narrow: Operator) -> np.ndarray:
    """Output code per (input code, channel): what the three operators compute."""
    wide = _rescale(graph, widen, CODES[:, None])
    combined = wide * constant[None, :] if op.op == "MUL" else wide + constant[None, :]
    return _rescale(graph, narrow, np.clip(combined, *_RANGES["int32"]))


def _scale(graph: TosaGraph, op: Operator) -> tuple[int, int]:
    """(multiplier, shift) of a per-tensor RESCALE."""
    return tuple(int(_data(graph, n).reshape(-1)[0]) for n in op.inputs[1:3])


def _candidates(slope: float, intercept: float, exact):
    """(weight, bias, multiplier, shift) to try, ``exact`` first: then int8 weights whose
    bias comes out nearest an integer, so the line moves least (its errors stay far below
    one output step)."""
    yield from exact
    sign = 1 if slope > 0 else -1
    weights = sorted(range(127, 0, -1), key=lambda w: abs(intercept * w / abs(slope)
                                                        - round(intercept * w / abs(slope))))
    for w in weights[:32]:
        try:
            multiplier, shift = encode_scale(abs(slope) / w)
        except ValueError:
            continue
        centre = intercept * w / abs(slope)
        for bias in dict.fromkeys((round(centre), int(np.floor(centre)), int(np.ceil(centre)))):
            yield sign * w, bias, multiplier, shift


def _fit(target: np.ndarray, x_zp: int, out_zp: int, low: int, high: int, double: bool,
         candidates):
    """The first of ``candidates`` (weight, bias, multiplier, shift) whose
    RESCALE(weight * (x - x_zp) + bias) equals ``target`` (one channel's output per input
    code) for every code; else None."""
    x = CODES - x_zp
    if np.all(target == target[0]):  # a zero multiplier: the bias alone
        candidates = [(0, (int(target[0]) - out_zp) << 16, *encode_scale(2.0**-16))]
    for weight, bias, multiplier, shift in candidates:
        if not (-(2**31) <= bias < 2**31 and 2 <= shift <= 63):
            continue
        got = apply_scale(weight * x + bias, multiplier, shift, double) + out_zp
        if np.array_equal(np.clip(got, low, high), target):
            return weight, bias, multiplier, shift
    return None


def _lines(op: Operator, widen_scale, narrow_scale, constant: np.ndarray):
    """Per channel: the candidates for the line the three operators compute (output steps
    per input step, and at input zero), exact forms first."""
    (mw, sw), (mn, sn) = widen_scale, narrow_scale
    for k in constant.tolist():
        factor = k if op.op == "MUL" else 1
        slope = mw / 2.0**sw * factor * mn / 2.0**sn
        intercept = 0.0 if op.op == "MUL" else k * mn / 2.0**sn
        exact = []
        if op.op == "MUL" and mw == 1 << sw and k:  # k * x * (mn >> sn), weight k / 2**j
            j = 0
            while abs(k) >> j > 127 and (k >> j) & 1 == 0:
                j += 1
            if abs(k >> j) <= 127 and mn < 2**31:
                exact.append((k >> j, 0, mn, sn - j))
        yield (_candidates(slope, intercept, exact) if slope else iter(()))


def _replace(graph: TosaGraph, op: Operator) -> bool:
    found = _match(graph, op)
    if found is None:
        return False
    x, widen, constant, narrow = found
    target = _table(graph, op, widen, constant, narrow)
    x_zp, out_zp = _zp(graph, widen.inputs[3]), _zp(graph, narrow.inputs[4])
    low, high = _RANGES[graph.tensors[narrow.outputs[0]].dtype]
    double = narrow.attrs.get("rounding_mode") == "DOUBLE_ROUND"
    lines = _lines(op, _scale(graph, widen), _scale(graph, narrow), constant)
    fits = [_fit(target[:, c], x_zp, out_zp, low, high, double, line)
            for c, line in enumerate(lines)]
    if any(f is None for f in fits):
        return False
    weights, biases, multipliers, shifts = (np.array(v) for v in zip(*fits))
    _emit(graph, narrow, x, x_zp, out_zp, weights, biases, multipliers, shifts)
    graph.operators.remove(op)
    graph.operators.remove(narrow)
    if not graph.consumers(widen.outputs[0]):
        graph.operators.remove(widen)
    return True


def _emit(graph: TosaGraph, narrow: Operator, x: str, x_zp: int, out_zp: int, weights,
          biases, multipliers, shifts) -> None:
    """DEPTHWISE_CONV2D (1x1, ``weights``, ``biases``) and a per-channel RESCALE into
    ``narrow``'s output, in ``narrow``'s place."""
    out = narrow.outputs[0]
    channels = len(weights)
    acc = graph.add_tensor(f"{out}_affine", graph.tensors[x].shape, "int32")
    conv_inputs = [
        x,
        graph.add_const(f"{out}_affine_weights", weights.astype(np.int8).reshape(1, 1, channels, 1),
                        "int8"),
        graph.add_const(f"{out}_affine_bias", biases.astype(np.int64), "int32"),
        graph.add_const(f"{out}_affine_input_zp", [x_zp], "int8"),
        graph.add_const(f"{out}_affine_weight_zp", [0], "int8"),
    ]
    graph.insert_before(narrow, "DEPTHWISE_CONV2D", conv_inputs, acc, pad=[0, 0, 0, 0],
                        stride=[1, 1], dilation=[1, 1], local_bound=False, acc_type="int32")
    out_dtype = graph.tensors[out].dtype
    scale_inputs = [
        acc,
        graph.add_const(f"{out}_affine_multiplier", multipliers.astype(np.int64), "int32"),
        graph.add_const(f"{out}_affine_shift", shifts.astype(np.int64), "int8"),
        graph.add_const(f"{out}_affine_acc_zp", [0], "int32"),
        graph.add_const(f"{out}_affine_output_zp", [out_zp], out_dtype),
    ]
    graph.insert_before(narrow, "RESCALE", scale_inputs, out, scale32=True,
                        rounding_mode=narrow.attrs.get("rounding_mode"), per_channel=True,
                        input_unsigned=False, output_unsigned=False)


def run(graph: TosaGraph) -> None:
    from pipeline.tosa.passes import remove_dead_operators_pass

    before = len(graph.operators)
    graph.rewrite("MUL", _replace)
    graph.rewrite("ADD", _replace)
    if len(graph.operators) != before:  # the constant's RESHAPEs and RESCALEs
        remove_dead_operators_pass.run(graph)
