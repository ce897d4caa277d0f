import numpy as np

from pipeline.tosa.graph import TosaGraph
from pipeline.tosa.passes import remove_dead_operators_pass
from pipeline.tosa.spec import parse_spec


def test_operators_nothing_reads_go_with_their_tensors():
    """A TILE a gather read around, and the RESHAPE only it read, disappear; what reaches an
    output stays."""
    graph = TosaGraph(parse_spec("TOSA-1.0+INT"))
    x = graph.add_input("x", (1, 4), "int32")
    shaped = graph.add_tensor("shaped", (1, 4, 1), "int32")
    graph.add_op("RESHAPE", [x, graph.add_const("shape", np.array([1, 4, 1]), "shape")], [shaped])
    tiled = graph.add_tensor("tiled", (1, 4, 8), "int32")
    multiples = graph.add_const("multiples", np.array([1, 1, 8]), "shape")
    graph.add_op("TILE", [shaped, multiples], [tiled])
    y = graph.add_tensor("y", (1, 4), "int32")
    graph.add_op("IDENTITY", [x], [y])
    graph.outputs = [y]
    remove_dead_operators_pass.run(graph)
    assert graph.op_counts() == {"IDENTITY": 1}
    assert not {"shaped", "tiled", "shape", "multiples"} & set(graph.tensors)
