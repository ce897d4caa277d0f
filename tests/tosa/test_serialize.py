import numpy as np
import pytest

from pipeline.errors import UserError
from pipeline.tosa import serialize
from pipeline.tosa.flatbuffer import operator_names, version
from pipeline.tosa.graph import TosaGraph
from pipeline.verify.reference_model import run_reference_model
from pipeline.tosa.spec import parse_spec

pytestmark = pytest.mark.needs_tosa_ref


def test_attribute_method_names():
    assert serialize.attribute_method("MAX_POOL2D") == "MaxPool2dAttribute"
    assert serialize.attribute_method("CONV2D") == "Conv2dAttribute"
    assert serialize.attribute_method("MATMUL") == "MatMulAttribute"


def test_graph_round_trips_as_tosa_1_0_and_runs(tmp_path):
    graph = TosaGraph(parse_spec("TOSA-1.0+INT"))
    x = graph.add_input("x", (2, 3), "int8")
    clamped = graph.add_tensor("clamped", (2, 3), "int8")
    graph.add_op("CLAMP", [x], [clamped], min_val=-5, max_val=7, nan_mode="PROPAGATE")
    out = graph.add_tensor("out", (3, 2), "int8")
    graph.add_op("RESHAPE", [clamped, graph.add_const("shape", np.array([3, 2]), "shape")], [out])
    graph.outputs = [out]
    path = tmp_path / "g.tosa"
    serialize.write(graph, path)
    assert version(path) == (1, 0, 0, False)
    assert [op for op in operator_names(path) if not op.startswith("CONST")] == ["CLAMP", "RESHAPE"]
    data = np.array([[-9, 0, 9], [1, -6, 8]], dtype=np.int8)
    result = run_reference_model(path, {"x": data}, ["out"])["out"]
    np.testing.assert_array_equal(result, np.clip(data, -5, 7).reshape(3, 2))


def test_graph_rejects_types_outside_the_spec():
    graph = TosaGraph(parse_spec("TOSA-1.0+INT"))
    with pytest.raises(
        UserError,
        match=r"t/lower: tensor y type must be one of .*int8.* for "
        r"TOSA-1.0\+INT; got fp32",
    ):
        graph.add_tensor("y", (1,), "fp32", where="t/lower")
