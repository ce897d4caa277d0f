import pytest
from torch import nn

from pipeline.tosa.passes import fold_qdq_pass
from tests.tosa.lowering_cases import count_targets, graph_before, lower_case

pytestmark = pytest.mark.needs_torch
QDQ = (
    "quantized_decomposed.quantize_per_tensor.default",
    "quantized_decomposed.dequantize_per_tensor.default",
    "quantized_decomposed.dequantize_per_channel.default",
)


def test_qdq_nodes_become_qparams(tmp_path):
    module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.MaxPool2d(2))
    case = lower_case(module, [(1, 3, 8, 8)], tmp_path)
    gm, ctx = graph_before(case.path("quantized.pt2"), "fold_qdq")
    # input q/dq, weight dq, bias dq, relu q/dq, max_pool q/dq
    assert count_targets(gm, *QDQ) == 8
    fold_qdq_pass.run(gm, ctx)
    assert count_targets(gm, *QDQ) == 0
    nodes = {n.name: n for n in gm.graph.nodes}
    conv = next(n for n in gm.graph.nodes if str(n.target) == "aten.conv2d.default")
    weight_q = conv.args[1].meta["qparams"]
    assert weight_q.dtype == "int8" and weight_q.axis == 0 and len(weight_q.scale) == 4
    assert conv.args[2].meta["qparams"].dtype == "int32"
    assert nodes["input"].meta["qparams"].dtype == "int8"  # nn.Sequential names it input
    assert "qparams" not in conv.meta  # quantized at the fused relu, not at the conv
    assert nodes["relu"].meta["qparams"] == nodes["max_pool2d"].meta["qparams"]
