import numpy as np

from pipeline.tosa.graph import TosaGraph
from pipeline.tosa.passes import remove_reshape_chains_pass
from pipeline.tosa.spec import parse_spec


def reshape(graph: TosaGraph, src: str, shape, name: str) -> str:
    out = graph.add_tensor(name, shape, "int8")
    graph.add_op(
        "RESHAPE", [src, graph.add_const(f"{name}_shape", np.array(shape), "shape")], [out]
    )
    return out


def test_chain_collapses_and_identity_disappears():
    graph = TosaGraph(parse_spec("TOSA-1.0+INT"))
    x = graph.add_input("x", (1, 1, 1, 32), "int8")
    a = reshape(graph, x, (1, 32), "a")
    b = reshape(graph, a, (1, 1, 1, 32), "b")
    c = graph.add_tensor("c", (1, 1, 1, 32), "int8")
    graph.add_op("CLAMP", [b], [c], min_val=-128, max_val=127, nan_mode="PROPAGATE")
    d = reshape(graph, c, (32,), "d")
    graph.outputs = [d]
    assert graph.op_counts()["RESHAPE"] == 3
    remove_reshape_chains_pass.run(graph)
    assert graph.op_counts() == {"CLAMP": 1, "RESHAPE": 1}
    assert graph.operators[0].inputs == ["x"]
    assert "a_shape" not in graph.tensors and "b" not in graph.tensors


def test_reshape_between_input_and_output_stays():
    graph = TosaGraph(parse_spec("TOSA-1.0+INT"))
    x = graph.add_input("x", (2, 3), "int8")
    graph.outputs = [reshape(graph, x, (2, 3), "y")]
    remove_reshape_chains_pass.run(graph)
    assert graph.op_counts() == {"RESHAPE": 1}
