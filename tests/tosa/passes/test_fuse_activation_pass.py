import pytest
from torch import nn

from pipeline.tosa.passes import fuse_activation_pass
from tests.tosa.lowering_cases import A16W8, INT8, count_targets, graph_before, lower_case

pytestmark = pytest.mark.needs_torch


@pytest.mark.parametrize(
    "dtype, relus_after",
    [
        pytest.param(INT8, 0, id="int8_zero_point_is_qmin_relu_removed"),
        pytest.param(A16W8, 1, id="int16_symmetric_relu_kept_as_clamp"),
    ],
)
def test_relu_fuses_into_conv_rescale(dtype, relus_after, tmp_path):
    module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    case = lower_case(module, [(1, 3, 6, 6)], tmp_path, dtype)
    spec = "TOSA-1.0+INT+int16" if dtype == A16W8 else "TOSA-1.0+INT"
    gm, ctx = graph_before(case.path("quantized.pt2"), "fuse_activation", spec)
    assert count_targets(gm, "aten.relu.default") == 1
    fuse_activation_pass.run(gm, ctx)
    assert count_targets(gm, "aten.relu.default") == relus_after
    conv = next(n for n in gm.graph.nodes if str(n.target) == "aten.conv2d.default")
    assert conv.meta["qparams"].dtype == ("int16" if dtype == A16W8 else "int8")


def test_standalone_relu_is_not_fused(tmp_path):
    module = nn.Sequential(nn.MaxPool2d(2), nn.ReLU())
    case = lower_case(module, [(1, 3, 6, 6)], tmp_path)
    gm, ctx = graph_before(case.path("quantized.pt2"), "fuse_activation")
    fuse_activation_pass.run(gm, ctx)
    assert count_targets(gm, "aten.relu.default") == 1
