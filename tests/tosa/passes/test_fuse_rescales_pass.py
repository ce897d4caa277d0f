import numpy as np
import pytest

from pipeline.tosa import serialize
from pipeline.tosa.graph import TosaGraph
from pipeline.tosa.passes import fuse_rescales_pass
from pipeline.tosa.quant_math import encode_scale
from pipeline.verify.reference_model import run_reference_model
from pipeline.tosa.spec import parse_spec

pytestmark = pytest.mark.needs_tosa_ref


def rescale(graph, src, scale, in_zp, out_zp, dtype, name):
    multiplier, shift = encode_scale(scale)
    src_dtype = graph.tensors[src].dtype
    out = graph.add_tensor(name, graph.tensors[src].shape, dtype)
    inputs = [
        src,
        graph.add_const(f"{name}_m", np.array([multiplier]), "int32"),
        graph.add_const(f"{name}_s", np.array([shift]), "int8"),
        graph.add_const(f"{name}_izp", np.array([in_zp]), src_dtype),
        graph.add_const(f"{name}_ozp", np.array([out_zp]), dtype),
    ]
    graph.add_op(
        "RESCALE",
        inputs,
        [out],
        scale32=True,
        rounding_mode="SINGLE_ROUND",
        per_channel=False,
        input_unsigned=False,
        output_unsigned=False,
    )
    return out


def chain(first_scale: float) -> TosaGraph:
    graph = TosaGraph(parse_spec("TOSA-1.0+INT"))
    x = graph.add_input("x", (1, 4, 4, 8), "int8")
    wide = rescale(graph, x, first_scale, 7, 0, "int32", "wide")
    graph.outputs = [rescale(graph, wide, 0.37, 0, -3, "int8", "out")]
    return graph


def run(graph: TosaGraph, tmp_path, x) -> np.ndarray:
    path = tmp_path / f"g{len(graph.operators)}.tosa"
    serialize.write(graph, path)
    return run_reference_model(path, {"x": x}, graph.outputs)[graph.outputs[0]]


def test_exact_widening_fuses_bit_exactly(tmp_path):
    x = np.random.default_rng(0).integers(-128, 128, (1, 4, 4, 8), dtype=np.int8)
    graph = chain(1.0)
    before = run(graph, tmp_path, x)
    assert graph.op_counts() == {"RESCALE": 2}
    fuse_rescales_pass.run(graph)
    assert graph.op_counts() == {"RESCALE": 1}
    np.testing.assert_array_equal(run(graph, tmp_path, x), before)


def test_rounding_widening_is_kept():
    graph = chain(3.3)  # the first RESCALE rounds: fusing would change results
    fuse_rescales_pass.run(graph)
    assert graph.op_counts() == {"RESCALE": 2}


def test_identity_rescale_disappears():
    graph = TosaGraph(parse_spec("TOSA-1.0+INT"))
    x = graph.add_input("x", (2, 3), "int8")
    same = rescale(graph, x, 1.0, 5, 5, "int8", "same")
    out = graph.add_tensor("out", (2, 3), "int8")
    graph.add_op("CLAMP", [same], [out], min_val=0, max_val=10, nan_mode="PROPAGATE")
    graph.outputs = [out]
    fuse_rescales_pass.run(graph)
    assert graph.op_counts() == {"CLAMP": 1}
    assert graph.operators[0].inputs == ["x"]
