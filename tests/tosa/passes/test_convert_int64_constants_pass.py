import pytest
import torch
from torch import fx

from pipeline.errors import UserError
from pipeline.tosa.passes import convert_int64_constants_pass
from pipeline.tosa.passes.context import PassContext
from pipeline.tosa.spec import parse_spec

pytestmark = pytest.mark.needs_torch
CTX = PassContext(parse_spec("TOSA-1.0+INT"), "t/lower")


def graph_with_constant(value: torch.Tensor) -> fx.GraphModule:
    graph = fx.Graph()
    x = graph.placeholder("x")
    index = graph.placeholder("index")
    index.meta["const"] = value
    graph.output(graph.call_function(torch.ops.aten.index_select.default, (x, 0, index)))
    return fx.GraphModule(torch.nn.Module(), graph)


def int64_count(gm) -> int:
    return sum(
        1
        for n in gm.graph.nodes
        if n.meta.get("const") is not None and n.meta["const"].dtype == torch.int64
    )


def test_int64_constants_become_int32():
    gm = graph_with_constant(torch.tensor([0, 2, 1], dtype=torch.int64))
    assert int64_count(gm) == 1
    convert_int64_constants_pass.run(gm, CTX)
    assert int64_count(gm) == 0
    index = next(n for n in gm.graph.nodes if n.name == "index")
    assert index.meta["const"].dtype == torch.int32
    assert index.meta["const"].tolist() == [0, 2, 1]


def test_int64_constant_beyond_int32_is_an_error():
    gm = graph_with_constant(torch.tensor([0, 2**40], dtype=torch.int64))
    with pytest.raises(UserError, match=r"t/lower: index: int64 constant values must fit int32"):
        convert_int64_constants_pass.run(gm, CTX)
