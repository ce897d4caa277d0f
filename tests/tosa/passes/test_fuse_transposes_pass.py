from pipeline.tosa.graph import TosaGraph
from pipeline.tosa.passes import fuse_transposes_pass
from pipeline.tosa.spec import parse_spec


def transpose(graph: TosaGraph, src: str, perm, name: str) -> str:
    shape = [graph.tensors[src].shape[p] for p in perm]
    out = graph.add_tensor(name, shape, "int8")
    graph.add_op("TRANSPOSE", [src], [out], perms=list(perm))
    return out


def clamp(graph: TosaGraph, src: str, name: str) -> str:
    out = graph.add_tensor(name, graph.tensors[src].shape, "int8")
    graph.add_op("CLAMP", [src], [out], min_val=-128, max_val=127, nan_mode="PROPAGATE")
    return out


def test_two_transposes_compose_into_one():
    graph = TosaGraph(parse_spec("TOSA-1.0+INT"))
    x = graph.add_input("x", (1, 2, 3, 4), "int8")
    a = transpose(graph, clamp(graph, x, "c"), (0, 2, 3, 1), "a")  # (1, 3, 4, 2)
    b = transpose(graph, a, (0, 2, 1, 3), "b")  # (1, 4, 3, 2)
    graph.outputs = [b]
    fuse_transposes_pass.run(graph)
    assert graph.op_counts() == {"CLAMP": 1, "TRANSPOSE": 1}
    fused = graph.operators[-1]
    assert fused.attrs["perms"] == [0, 3, 2, 1]
    assert graph.tensors[fused.outputs[0]].shape == (1, 4, 3, 2)
    assert "a" not in graph.tensors


def test_transposes_that_cancel_disappear():
    graph = TosaGraph(parse_spec("TOSA-1.0+INT"))
    x = graph.add_input("x", (1, 2, 3, 4), "int8")
    a = transpose(graph, clamp(graph, x, "c"), (0, 2, 3, 1), "a")
    b = transpose(graph, a, (0, 3, 1, 2), "b")
    graph.outputs = [clamp(graph, b, "d")]
    fuse_transposes_pass.run(graph)
    assert graph.op_counts() == {"CLAMP": 2}
    assert graph.operators[1].inputs == ["c"]


def test_transpose_read_twice_is_kept():
    graph = TosaGraph(parse_spec("TOSA-1.0+INT"))
    x = graph.add_input("x", (1, 2, 3, 4), "int8")
    a = transpose(graph, x, (0, 2, 3, 1), "a")
    b = transpose(graph, a, (0, 3, 1, 2), "b")
    graph.outputs = [a, b]
    fuse_transposes_pass.run(graph)
    assert graph.op_counts() == {"TRANSPOSE": 2}
