"""split_transpose_conv (both NPU variants): a strided integer TRANSPOSE_CONV2D as one CONV2D
per output phase, interleaved; bit for bit the same in the TOSA reference model, and the
cases left alone."""

import copy

import numpy as np
import pytest

from pipeline.tosa import serialize
from pipeline.tosa.graph import TosaGraph
from pipeline.tosa.passes import split_transpose_conv_pass
from pipeline.tosa.quant_math import encode_scale
from pipeline.verify.reference_model import run_reference_model
from pipeline.tosa.spec import parse_spec

RUNS = {"u55": split_transpose_conv_pass.run_u55, "u85": split_transpose_conv_pass.run_u85}


def deconv_graph(shape, out_channels, kernel, stride, out_pad, dtype="int8", seed=0):
    """x (NHWC ``shape``) -> TRANSPOSE_CONV2D -> per-channel RESCALE -> y (``dtype``)."""
    rng = np.random.default_rng(seed)
    graph = TosaGraph(parse_spec("TOSA-1.0+INT+int16"))
    n, h, w, c = shape
    out_h = (h - 1) * stride[0] + out_pad[0] + out_pad[1] + kernel[0]
    out_w = (w - 1) * stride[1] + out_pad[2] + out_pad[3] + kernel[1]
    acc_type = "int32" if dtype == "int8" else "int48"
    x = graph.add_input("x", shape, dtype)
    acc = graph.add_tensor("acc", (n, out_h, out_w, out_channels), acc_type)
    weights = rng.integers(-127, 128, (out_channels, *kernel, c)).astype(np.int8)
    inputs = [
        x,
        graph.add_const("weights", weights, "int8"),
        graph.add_const("bias", rng.integers(-2000, 2000, out_channels), acc_type),
        graph.add_const("input_zp", [-3 if dtype == "int8" else 0], dtype),
        graph.add_const("weight_zp", [0], "int8"),
    ]
    graph.add_op("TRANSPOSE_CONV2D", inputs, [acc], out_pad=list(out_pad), stride=list(stride),
                 local_bound=False, acc_type=acc_type)  # fmt: skip
    bits = 32 if acc_type == "int32" else 16
    scales = [encode_scale(float(s), bits) for s in rng.uniform(1e-4, 3e-3, out_channels)]
    y = graph.add_tensor("y", (n, out_h, out_w, out_channels), dtype)
    rescale_inputs = [
        acc,
        graph.add_const("multiplier", [m for m, _ in scales], f"int{bits}"),
        graph.add_const("shift", [s for _, s in scales], "int8"),
        graph.add_const("acc_zp", [0], acc_type),
        graph.add_const("y_zp", [5 if dtype == "int8" else 0], dtype),
    ]
    graph.add_op("RESCALE", rescale_inputs, [y], scale32=bits == 32, rounding_mode="SINGLE_ROUND",
                 per_channel=True, input_unsigned=False, output_unsigned=False)  # fmt: skip
    graph.outputs = [y]
    return graph


def rewritten(graph, variant):
    copied = copy.deepcopy(graph)
    RUNS[variant](copied)
    return copied


CASES = [
    pytest.param(((1, 6, 6, 8), 4, (4, 4), (2, 2), (-1, -1, -1, -1)), id="k4_s2_p1"),
    pytest.param(((1, 5, 7, 8), 6, (3, 3), (2, 2), (-1, 0, -1, 0)), id="k3_s2_p1_outpad1"),
    pytest.param(((1, 6, 6, 4), 4, (3, 3), (2, 2), (-1, -1, -1, -1)), id="k3_s2_p1_odd_output"),
    pytest.param(((2, 4, 4, 8), 8, (2, 2), (2, 2), (0, 0, 0, 0)), id="k2_s2_batch2"),
    pytest.param(((1, 6, 6, 4), 4, (3, 3), (1, 1), (-1, -1, -1, -1)), id="k3_s1_p1"),
    pytest.param(((1, 1, 16, 8), 4, (1, 4), (1, 2), (0, 0, -1, -1)), id="conv_transpose1d"),
    pytest.param(((1, 4, 4, 4), 4, (5, 5), (3, 3), (-1, -1, -1, -1)), id="k5_s3"),
    pytest.param(((1, 4, 4, 4), 4, (3, 3), (2, 2), (1, 0, 2, 1)), id="positive_out_pad"),
]


@pytest.mark.parametrize("variant", list(RUNS))
@pytest.mark.parametrize("args", CASES)
def test_phases_replace_the_transposed_convolution(args, variant):
    graph = deconv_graph(*args)
    after = rewritten(graph, variant)
    stride = args[3]
    counts = after.op_counts()
    assert "TRANSPOSE_CONV2D" not in counts
    assert counts["CONV2D"] == counts["RESCALE"] == stride[0] * stride[1]
    moves_rows = stride[0] > 1 and variant == "u55"
    assert counts.get("TRANSPOSE", 0) == (1 if moves_rows else 0)  # the U85 moves rows by CONCAT
    assert after.outputs == graph.outputs


@pytest.mark.needs_tosa_ref
@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("args", CASES)
def test_phases_match_the_transposed_convolution_bit_for_bit(args, dtype, tmp_path):
    graph = deconv_graph(*args, dtype=dtype)
    serialize.write(graph, tmp_path / "native.tosa")
    rng = np.random.default_rng(1)
    low, high = (-128, 128) if dtype == "int8" else (-32768, 32768)
    x = rng.integers(low, high, args[0]).astype(dtype)
    want = run_reference_model(tmp_path / "native.tosa", {"x": x}, ["y"], where="native")["y"]
    for variant in RUNS:
        serialize.write(rewritten(graph, variant), tmp_path / f"{variant}.tosa")
        got = run_reference_model(tmp_path / f"{variant}.tosa", {"x": x}, ["y"], where=variant)
        np.testing.assert_array_equal(got["y"], want, err_msg=variant)


@pytest.mark.parametrize("graph", [
    pytest.param(deconv_graph((1, 4, 4, 4), 4, (1, 1), (2, 2), (0, 0, 0, 0)),
                 id="kernel_below_stride_phase_without_taps"),
    pytest.param(deconv_graph((1, 4, 4, 4), 4, (3, 3), (2, 2), (-2, -2, -2, -2)),
                 id="cropping_out_pad_needs_negative_padding"),
])  # fmt: skip
def test_other_transposed_convolutions_are_left_alone(graph):
    for variant in RUNS:
        assert rewritten(graph, variant).op_counts() == {"TRANSPOSE_CONV2D": 1, "RESCALE": 1}
