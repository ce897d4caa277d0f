"""Every CPU kernel against the TOSA reference model, bit-exact: single-operator TOSA graphs
(written with the project's own serializer) over shapes, zero points, int16, broadcasting,
padding, strides and dilation, run in the reference model and, as a CPU graph, in
tosa_cpu_run built with ASan and UBSan."""

from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.cpu_helpers import Graph, assert_bit_exact, build_tool, compare, random

pytestmark = [pytest.mark.needs_tosa_ref, pytest.mark.needs_cmake]

ACC = {"int8": ("int32", "int32"), "int16": ("int48", "int48")}  # acc type, bias type


@pytest.fixture(scope="module")
def tool(request):
    return build_tool(request)


def _extent(size, k, stride, dil, pad_a, pad_b):
    span = size - 1 + pad_a + pad_b - (k - 1) * dil
    assert span % stride == 0, "test case: the window must tile the input exactly"
    return span // stride + 1


def conv2d(dtype="int8", shape=(1, 9, 9, 3), oc=4, k=(3, 3), stride=(1, 1), pad=(1, 1, 1, 1),
           dil=(1, 1), izp=0, wzp=0, bias_one=False, seed=0):
    g = Graph()
    n, h, w, c = shape
    x = g.input("x", random(shape, dtype, seed), dtype)
    acc, bias_t = ACC[dtype]
    weight = g.const(random((oc, *k, c), "int8", seed + 1), "int8")
    bias = g.const(random((1 if bias_one else oc,), "int32", seed + 2), bias_t)
    out = (n, _extent(h, k[0], stride[0], dil[0], pad[0], pad[1]),
           _extent(w, k[1], stride[1], dil[1], pad[2], pad[3]), oc)
    y = g.op("CONV2D", [x, weight, bias, g.zp(izp, dtype), g.zp(wzp, "int8")], out, acc,
             pad=list(pad), stride=list(stride), dilation=list(dil), local_bound=False,
             acc_type=acc)
    return g.output(y)


def depthwise(dtype="int8", shape=(1, 9, 9, 4), m=2, k=(3, 3), stride=(1, 1), pad=(1, 1, 1, 1),
              dil=(1, 1), izp=0, wzp=0, bias_one=False, seed=0):
    g = Graph()
    n, h, w, c = shape
    x = g.input("x", random(shape, dtype, seed), dtype)
    acc, bias_t = ACC[dtype]
    weight = g.const(random((*k, c, m), "int8", seed + 1), "int8")
    bias = g.const(random((1 if bias_one else c * m,), "int32", seed + 2), bias_t)
    out = (n, _extent(h, k[0], stride[0], dil[0], pad[0], pad[1]),
           _extent(w, k[1], stride[1], dil[1], pad[2], pad[3]), c * m)
    y = g.op("DEPTHWISE_CONV2D", [x, weight, bias, g.zp(izp, dtype), g.zp(wzp, "int8")], out, acc,
             pad=list(pad), stride=list(stride), dilation=list(dil), local_bound=False,
             acc_type=acc)
    return g.output(y)


def transpose_conv(dtype="int8", shape=(1, 4, 5, 3), oc=4, k=(3, 3), stride=(2, 2),
                   out_pad=(0, 0, 0, 0), izp=0, wzp=0, seed=0):
    g = Graph()
    n, h, w, c = shape
    x = g.input("x", random(shape, dtype, seed), dtype)
    acc, bias_t = ACC[dtype]
    weight = g.const(random((oc, *k, c), "int8", seed + 1), "int8")
    bias = g.const(random((oc,), "int32", seed + 2), bias_t)
    out = (n, (h - 1) * stride[0] + out_pad[0] + out_pad[1] + k[0],
           (w - 1) * stride[1] + out_pad[2] + out_pad[3] + k[1], oc)
    y = g.op("TRANSPOSE_CONV2D", [x, weight, bias, g.zp(izp, dtype), g.zp(wzp, "int8")], out,
             acc, out_pad=list(out_pad), stride=list(stride), local_bound=False, acc_type=acc)
    return g.output(y)


def matmul(dtype="int8", n=2, h=3, c=5, w=4, azp=0, bzp=0, seed=0):
    g = Graph()
    a = g.input("a", random((n, h, c), dtype, seed), dtype)
    b = g.input("b", random((n, c, w), dtype, seed + 1), dtype)
    y = g.op("MATMUL", [a, b, g.zp(azp, dtype), g.zp(bzp, dtype)], (n, h, w), ACC[dtype][0])
    return g.output(y)


def pool(op, dtype="int8", shape=(1, 9, 9, 3), k=(3, 3), stride=(2, 2), pad=(1, 1, 1, 1),
         izp=0, ozp=0, seed=0):
    g = Graph()
    n, h, w, c = shape
    x = g.input("x", random(shape, dtype, seed), dtype)
    out = (n, _extent(h, k[0], stride[0], 1, pad[0], pad[1]),
           _extent(w, k[1], stride[1], 1, pad[2], pad[3]), c)
    if op == "AVG_POOL2D":
        y = g.op(op, [x, g.zp(izp, dtype), g.zp(ozp, dtype)], out, dtype, kernel=list(k),
                 stride=list(stride), pad=list(pad), acc_type="int32")
    else:
        y = g.op(op, [x], out, dtype, kernel=list(k), stride=list(stride), pad=list(pad),
                 nan_mode="PROPAGATE")
    return g.output(y)


def rescale(in_dtype="int8", out_dtype="int8", shape=(1, 4, 4, 6), per_channel=True,
            double_round=False, shift=(30, 38), izp=0, ozp=0, low=None, high=None,
            in_unsigned=False, out_unsigned=False, ties=False, seed=0):
    g = Graph()
    values = random(shape, in_dtype, seed, low, high)
    channels = shape[-1] if per_channel else 1
    rng = np.random.default_rng(seed + 1)
    scale32 = in_dtype != "int48"
    bits = 32 if scale32 else 16
    multiplier = rng.integers(1 << (bits - 2), (1 << (bits - 1)) - 1, size=channels)
    if ties:  # multiplier 2**30 and inputs on half steps: every rounding is a tie
        multiplier[:] = 1 << 30
        values = (values // 256 * 512 + 256 * np.sign(values)).astype(values.dtype)
    x = g.input("x", values, in_dtype)
    shifts = rng.integers(shift[0], shift[1] + 1, size=channels)
    inputs = [x, g.const(multiplier, f"int{bits}"), g.const(shifts, "int8"),
              g.zp(izp, in_dtype), g.zp(ozp, out_dtype)]
    y = g.op("RESCALE", inputs, shape, out_dtype, scale32=scale32,
             rounding_mode="DOUBLE_ROUND" if double_round else "SINGLE_ROUND",
             per_channel=per_channel, input_unsigned=in_unsigned, output_unsigned=out_unsigned)
    return g.output(y)


def rescale_int48(seed=0):
    """An int16 CONV2D's int48 accumulator rescaled with 16-bit multipliers (a16w8)."""
    g = conv2d("int16", shape=(1, 5, 5, 8), oc=3, seed=seed)
    acc = g.g.outputs.pop()
    inputs = [acc, g.const([20000, 30000, 16385], "int16"), g.const([30, 33, 36], "int8"),
              g.zp(0, "int48"), g.zp(0, "int16")]
    y = g.op("RESCALE", inputs, g.g.tensors[acc].shape, "int16", scale32=False,
             rounding_mode="SINGLE_ROUND", per_channel=True, input_unsigned=False,
             output_unsigned=False)
    return g.output(y)


def table(dtype="int8", shape=(2, 50, 40), seed=0):
    g = Graph()
    x = g.input("x", random(shape, dtype, seed), dtype)
    if dtype == "int8":
        values = random((256,), dtype, seed + 1)
    else:  # TOSA: adjacent int16 entries differ by an int16 (the interpolation slope)
        steps = random((513,), "int16", seed + 1, -3000, 3000).astype(np.int64)
        values = np.clip(np.cumsum(steps), -32768, 32767).astype(np.int16)
    t = g.const(values, dtype)
    y = g.op("TABLE", [x, t], shape, "int8" if dtype == "int8" else "int32")
    return g.output(y)


def binary(op, dtype="int32", a_shape=(2, 3, 4), b_shape=(2, 3, 4), out_dtype=None, low=None,
           high=None, b_low=None, b_high=None, seed=0, **attrs):
    g = Graph()
    a = g.input("a", random(a_shape, dtype, seed, low, high), dtype)
    b = g.input("b", random(b_shape, dtype, seed + 1, b_low, b_high), dtype)
    out = tuple(max(x, y) for x, y in zip(a_shape, b_shape))
    return g.output(g.op(op, [a, b], out, out_dtype or dtype, **attrs))


def mul(dtype="int32", a_shape=(2, 3, 4), b_shape=(2, 3, 4), shift=0, seed=0):
    g = Graph()
    low, high = (-(1 << 15), 1 << 15) if dtype == "int32" else (None, None)
    a = g.input("a", random(a_shape, dtype, seed, low, high), dtype)
    b = g.input("b", random(b_shape, dtype, seed + 1, low, high), dtype)
    out = tuple(max(x, y) for x, y in zip(a_shape, b_shape))
    return g.output(g.op("MUL", [a, b, g.const([shift], "int8")], out, "int32"))


def unary(op, dtype="int32", shape=(3, 5, 7), out_dtype=None, low=None, high=None, zps=None,
          seed=0, **attrs):
    g = Graph()
    x = g.input("x", random(shape, dtype, seed, low, high), dtype)
    inputs = [x] + ([g.zp(zps[0], dtype), g.zp(zps[1], dtype)] if zps else [])
    return g.output(g.op(op, inputs, shape, out_dtype or dtype, **attrs))


def select(shape=(2, 3, 4), cond_shape=(2, 1, 4), dtype="int8", seed=0):
    g = Graph()
    c = g.input("c", random(cond_shape, "bool", seed), "bool")
    a = g.input("a", random(shape, dtype, seed + 1), dtype)
    b = g.input("b", random((1, 3, 1), dtype, seed + 2), dtype)
    return g.output(g.op("SELECT", [c, a, b], shape, dtype))


def reduce(op, dtype="int32", shape=(3, 4, 5), axis=1, seed=0):
    g = Graph()
    x = g.input("x", random(shape, dtype, seed), dtype)
    out = tuple(1 if i == axis else d for i, d in enumerate(shape))
    nan = {"nan_mode": "PROPAGATE"} if op in ("REDUCE_MAX", "REDUCE_MIN") else {}
    return g.output(g.op(op, [x], out, dtype, axis=axis, **nan))


def argmax(dtype="int8", shape=(3, 4, 5), axis=2, seed=0):
    g = Graph()
    x = g.input("x", random(shape, dtype, seed, -3, 3), dtype)
    out = tuple(d for i, d in enumerate(shape) if i != axis)
    return g.output(g.op("ARGMAX", [x], out, "int32", axis=axis, nan_mode="PROPAGATE"))


def concat(dtype="int8", axis=1, seed=0):
    g = Graph()
    shapes = [(2, 3, 4), (2, 1, 4), (2, 5, 4)] if axis == 1 else [(2, 3, 4), (2, 3, 2)]
    xs = [g.input(f"x{i}", random(s, dtype, seed + i), dtype) for i, s in enumerate(shapes)]
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return g.output(g.op("CONCAT", xs, out, dtype, axis=axis))


def movement(op, dtype="int8", seed=0):
    g = Graph()
    shape = (2, 3, 4, 5)
    x = g.input("x", random(shape, dtype, seed), dtype)
    if op == "SLICE":
        y = g.op(op, [x, g.shape([1, 0, 1, 2]), g.shape([1, 3, 2, 3])], (1, 3, 2, 3), dtype)
    elif op == "PAD":
        y = g.op(op, [x, g.shape([0, 1, 2, 0, 1, 1, 0, 3]), g.const([-7], dtype)],
                 (3, 5, 6, 8), dtype)
    elif op == "RESHAPE":
        y = g.op(op, [x, g.shape([6, 20])], (6, 20), dtype)
    elif op == "TRANSPOSE":
        y = g.op(op, [x], (4, 2, 5, 3), dtype, perms=[2, 0, 3, 1])
    elif op == "TILE":
        y = g.op(op, [x, g.shape([1, 2, 1, 3])], (2, 6, 4, 15), dtype)
    elif op == "REVERSE":
        y = g.op(op, [x], shape, dtype, axis=2)
    else:
        y = g.op(op, [x], shape, dtype)
    return g.output(y)


def resize(mode="NEAREST", dtype="int8", shape=(1, 5, 6, 3), scale=(4, 2, 4, 2), offset=(0, 0),
           border=(0, 0), seed=0):
    g = Graph()
    x = g.input("x", random(shape, dtype, seed), dtype)
    n, h, w, c = shape
    oh = ((h - 1) * scale[0] - offset[0] + border[0]) // scale[1] + 1
    ow = ((w - 1) * scale[2] - offset[1] + border[1]) // scale[3] + 1
    out_dtype = dtype if mode == "NEAREST" else ACC[dtype][0]
    y = g.op("RESIZE", [x, g.shape(scale), g.shape(offset), g.shape(border)], (n, oh, ow, c),
             out_dtype, mode=mode)
    return g.output(y)


def gather(dtype="int8", seed=0):
    g = Graph()
    values = g.input("values", random((2, 7, 3), dtype, seed), dtype)
    indices = g.input("indices", random((2, 5), "int32", seed + 1, 0, 6), "int32")
    return g.output(g.op("GATHER", [values, indices], (2, 5, 3), dtype))


def scatter(dtype="int16", seed=0):
    g = Graph()
    values = g.input("values", random((2, 7, 3), dtype, seed), dtype)
    rng = np.random.default_rng(seed + 1)
    chosen = np.stack([rng.permutation(7)[:4] for _ in range(2)]).astype(np.int32)
    indices = g.input("indices", chosen, "int32")
    source = g.input("source", random((2, 4, 3), dtype, seed + 2), dtype)
    return g.output(g.op("SCATTER", [values, indices, source], (2, 7, 3), dtype))


def two_ops(seed=0):
    """Two operators through the arena: CONV2D's accumulator feeds a RESCALE."""
    g = conv2d(shape=(1, 6, 6, 2), oc=3, izp=-3, seed=seed)
    acc = g.g.outputs.pop()
    inputs = [acc, g.const([1 << 30] * 3, "int32"), g.const([38, 39, 40], "int8"),
              g.zp(0, "int32"), g.zp(5, "int8")]
    y = g.op("RESCALE", inputs, g.g.tensors[acc].shape, "int8", scale32=True,
             rounding_mode="DOUBLE_ROUND", per_channel=True, input_unsigned=False,
             output_unsigned=False)
    return g.output(y, acc)


I32 = dict(low=-(1 << 20), high=1 << 20)
CASES = {
    # Convolutions: int8 (zero points), int16 with int48 accumulators, strides, padding,
    # dilation, non-square kernels, a broadcast bias.
    "conv2d_int8_3x3_pad": lambda: conv2d(),
    "conv2d_int8_zp": lambda: conv2d(izp=-7, wzp=3),
    "conv2d_int8_stride2": lambda: conv2d(stride=(2, 2), pad=(1, 1, 1, 1)),
    "conv2d_int8_dilation2": lambda: conv2d(shape=(1, 10, 11, 2), dil=(2, 2), pad=(2, 2, 1, 2),
                                            izp=5),
    "conv2d_int8_1x5_asym": lambda: conv2d(shape=(2, 6, 12, 5), k=(1, 5), stride=(1, 3),
                                           pad=(0, 0, 2, 0)),
    "conv2d_int8_bias1": lambda: conv2d(bias_one=True, pad=(0, 0, 0, 0), shape=(1, 5, 5, 16)),
    "conv2d_int16": lambda: conv2d("int16", shape=(1, 7, 7, 8), stride=(2, 2)),
    "conv2d_int16_dilation": lambda: conv2d("int16", shape=(1, 9, 9, 3), dil=(2, 1),
                                            pad=(1, 1, 0, 0)),
    "depthwise_int8": lambda: depthwise(),
    "depthwise_int8_zp_stride2": lambda: depthwise(izp=12, wzp=-2, stride=(2, 2), m=1),
    "depthwise_int8_dilation": lambda: depthwise(shape=(1, 11, 10, 3), dil=(2, 3),
                                                 pad=(1, 1, 3, 3), m=3),
    "depthwise_int16": lambda: depthwise("int16", shape=(1, 8, 8, 5), pad=(0, 1, 0, 1),
                                         stride=(2, 2)),
    "transpose_conv_int8": lambda: transpose_conv(),
    "transpose_conv_int8_zp_pad": lambda: transpose_conv(izp=-4, wzp=2, out_pad=(1, 0, 0, 1),
                                                         stride=(1, 2)),
    "transpose_conv_int8_negative_pad": lambda: transpose_conv(out_pad=(-1, -1, 0, -2)),
    "transpose_conv_int16": lambda: transpose_conv("int16", k=(2, 2)),
    "matmul_int8": lambda: matmul(),
    "matmul_int8_zp": lambda: matmul(azp=-3, bzp=11, n=1, h=7, c=16, w=9),
    "matmul_int16": lambda: matmul("int16", c=33),
    # Pooling: padding not counted in the average, zero points, int16.
    "avg_pool_int8_pad": lambda: pool("AVG_POOL2D"),
    "avg_pool_int8_zp": lambda: pool("AVG_POOL2D", izp=-9, ozp=4, k=(2, 3), stride=(1, 2),
                                     pad=(0, 1, 1, 1)),
    "avg_pool_int8_global": lambda: pool("AVG_POOL2D", shape=(1, 7, 7, 5), k=(7, 7),
                                         stride=(1, 1), pad=(0, 0, 0, 0)),
    "avg_pool_int16": lambda: pool("AVG_POOL2D", "int16", shape=(2, 6, 6, 3), k=(3, 3),
                                   stride=(3, 3), pad=(0, 0, 0, 0)),
    "max_pool_int8": lambda: pool("MAX_POOL2D"),
    "max_pool_int8_2x2": lambda: pool("MAX_POOL2D", shape=(1, 8, 8, 4), k=(2, 2), stride=(2, 2),
                                      pad=(0, 0, 0, 0)),
    "max_pool_int16": lambda: pool("MAX_POOL2D", "int16", k=(3, 2), stride=(1, 1),
                                   pad=(1, 1, 0, 1)),
    # RESCALE: single and double rounding, per channel and per tensor, zero points, int16,
    # int32 sources, int48 with 16-bit multipliers, unsigned int8.
    "rescale_int8_per_channel": lambda: rescale(shift=(30, 31), izp=-5, ozp=3),
    "rescale_int32_double_round": lambda: rescale("int32", "int8", double_round=True,
                                                  shift=(33, 45), ozp=-10, **I32),
    "rescale_int32_single_round": lambda: rescale("int32", "int16", per_channel=False,
                                                  shift=(32, 40), **I32),
    "rescale_int32_ties_single": lambda: rescale("int32", "int16", per_channel=False,
                                                 shift=(39, 39), ties=True, **I32),
    "rescale_int32_ties_double": lambda: rescale("int32", "int16", per_channel=False,
                                                 shift=(39, 39), ties=True, double_round=True,
                                                 **I32),
    "rescale_int32_to_int32": lambda: rescale("int32", "int32", shift=(20, 31), **I32),
    "rescale_int16_to_int16": lambda: rescale("int16", "int16", shift=(28, 32)),
    "rescale_int8_to_int32": lambda: rescale("int8", "int32", shift=(10, 20), izp=7),
    "rescale_int16_to_int8_double": lambda: rescale("int16", "int8", double_round=True,
                                                    shift=(30, 40)),
    "rescale_uint8_in": lambda: rescale("int8", "int8", shift=(30, 31), izp=128,
                                        in_unsigned=True, per_channel=False),
    "rescale_uint8_out": lambda: rescale("int8", "int8", shift=(30, 31), izp=-3, ozp=128,
                                         out_unsigned=True),
    "rescale_int48_scale16": rescale_int48,
    "table_int8": lambda: table(),
    "table_int16": lambda: table("int16"),
    # Elementwise with broadcasting.
    "add_int32": lambda: binary("ADD", **I32),
    "sub_int32": lambda: binary("SUB", a_shape=(3, 5, 7), b_shape=(3, 5, 7), **I32),
    "add_int32_broadcast": lambda: binary("ADD", a_shape=(2, 1, 4), b_shape=(1, 3, 1), **I32),
    "sub_int32_broadcast": lambda: binary("SUB", a_shape=(1, 3, 4), b_shape=(2, 3, 1), **I32),
    "maximum_int32": lambda: binary("MAXIMUM", a_shape=(4, 1), b_shape=(4, 6),
                                    nan_mode="PROPAGATE"),
    "minimum_int32": lambda: binary("MINIMUM", a_shape=(1, 6), b_shape=(4, 6),
                                    nan_mode="PROPAGATE"),
    "mul_int32_shift": lambda: mul(shift=7),
    "mul_int32_broadcast": lambda: mul(a_shape=(2, 1, 4), b_shape=(2, 3, 1)),
    "mul_int8": lambda: mul("int8", a_shape=(3, 4), b_shape=(1, 4)),
    "mul_int16": lambda: mul("int16"),
    "equal_int32": lambda: binary("EQUAL", out_dtype="bool", low=-2, high=2, b_low=-2, b_high=2),
    "greater_int32": lambda: binary("GREATER", a_shape=(2, 3, 1), out_dtype="bool", low=-3,
                                    high=3, b_low=-3, b_high=3),
    "greater_equal_int32": lambda: binary("GREATER_EQUAL", out_dtype="bool", low=-3, high=3,
                                          b_low=-3, b_high=3),
    "bitwise_and_int8": lambda: binary("BITWISE_AND", "int8"),
    "bitwise_or_int16": lambda: binary("BITWISE_OR", "int16", b_shape=(1, 1, 4)),
    "bitwise_xor_int32": lambda: binary("BITWISE_XOR"),
    "logical_and": lambda: binary("LOGICAL_AND", "bool"),
    "logical_or": lambda: binary("LOGICAL_OR", "bool", a_shape=(2, 1, 4)),
    "logical_xor": lambda: binary("LOGICAL_XOR", "bool"),
    "logical_left_shift_int32": lambda: binary("LOGICAL_LEFT_SHIFT", b_low=0, b_high=31),
    "logical_right_shift_int8": lambda: binary("LOGICAL_RIGHT_SHIFT", "int8", b_low=0, b_high=7),
    "logical_right_shift_int32": lambda: binary("LOGICAL_RIGHT_SHIFT", b_low=0, b_high=31,
                                                low=-(1 << 31), high=(1 << 31) - 1),
    "arithmetic_right_shift_round": lambda: binary("ARITHMETIC_RIGHT_SHIFT", b_low=0, b_high=31,
                                                   round=True),
    "arithmetic_right_shift_int16": lambda: binary("ARITHMETIC_RIGHT_SHIFT", "int16", b_low=0,
                                                   b_high=15, round=False),
    "intdiv_int32": lambda: binary("INTDIV", b_low=1, b_high=50, low=-1000, high=1000),
    "abs_int32": lambda: unary("ABS"),
    "bitwise_not_int16": lambda: unary("BITWISE_NOT", "int16"),
    "clz_int32": lambda: unary("CLZ", low=-(1 << 31), high=(1 << 31) - 1),
    "logical_not": lambda: unary("LOGICAL_NOT", "bool"),
    "negate_int8_zp": lambda: unary("NEGATE", "int8", zps=(-4, 9)),
    "negate_int32": lambda: unary("NEGATE", zps=(0, 0)),
    "cast_int8_to_int32": lambda: unary("CAST", "int8", out_dtype="int32"),
    "cast_int32_to_int8": lambda: unary("CAST", out_dtype="int8", low=-100000, high=100000),
    "cast_int16_to_int8": lambda: unary("CAST", "int16", out_dtype="int8"),
    "cast_bool_to_int32": lambda: unary("CAST", "bool", out_dtype="int32"),
    "cast_int32_to_bool": lambda: unary("CAST", out_dtype="bool", low=-2, high=2),
    "clamp_int8": lambda: unary("CLAMP", "int8", min_val=-20, max_val=50, nan_mode="PROPAGATE"),
    "clamp_int16": lambda: unary("CLAMP", "int16", min_val=-32768, max_val=1000,
                                 nan_mode="PROPAGATE"),
    "identity_int16": lambda: unary("IDENTITY", "int16"),
    "select_broadcast": lambda: select(),
    # Reductions and data movement.
    "reduce_sum_int32": lambda: reduce("REDUCE_SUM"),
    "reduce_max_int8": lambda: reduce("REDUCE_MAX", "int8", axis=2),
    "reduce_min_int16": lambda: reduce("REDUCE_MIN", "int16", axis=0),
    "reduce_any": lambda: reduce("REDUCE_ANY", "bool"),
    "reduce_all": lambda: reduce("REDUCE_ALL", "bool", axis=2),
    "argmax_int8": lambda: argmax(),
    "argmax_int16_axis0": lambda: argmax("int16", axis=0),
    "concat_int8_axis1": lambda: concat(),
    "concat_int32_axis2": lambda: concat("int32", axis=2),
    "slice_int8": lambda: movement("SLICE"),
    "slice_int32": lambda: movement("SLICE", "int32"),
    "pad_int8": lambda: movement("PAD"),
    "pad_int16": lambda: movement("PAD", "int16"),
    "reshape_int32": lambda: movement("RESHAPE", "int32"),
    "transpose_int8": lambda: movement("TRANSPOSE"),
    "transpose_int16": lambda: movement("TRANSPOSE", "int16"),
    "tile_int8": lambda: movement("TILE"),
    "reverse_int16": lambda: movement("REVERSE", "int16"),
    "resize_nearest_x2": lambda: resize(),
    "resize_nearest_offset": lambda: resize(scale=(3, 1, 5, 2), offset=(-1, 1), border=(1, 0)),
    "resize_bilinear_int8": lambda: resize("BILINEAR"),
    "resize_bilinear_int16": lambda: resize("BILINEAR", "int16", scale=(4, 1, 2, 1)),
    "resize_bilinear_down": lambda: resize("BILINEAR", shape=(1, 9, 9, 2), scale=(2, 4, 2, 4)),
    "gather_int8": lambda: gather(),
    "gather_int32": lambda: gather("int32"),
    "scatter_int16": lambda: scatter(),
    "conv_then_rescale": two_ops,
}


@pytest.mark.parametrize("case", list(CASES))
def test_kernel_matches_the_reference_model(case, tool, tmp_path):
    graph = CASES[case]()
    tosa = graph.write(tmp_path / "graph.tosa")
    assert_bit_exact(compare(tool, tosa, graph.values))
