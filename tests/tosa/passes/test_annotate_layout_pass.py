import pytest
from torch import nn

from pipeline.tosa.layout import NHWC
from pipeline.tosa.passes import annotate_layout_pass
from tests.tosa.lowering_cases import graph_before, lower_case

pytestmark = pytest.mark.needs_torch


def test_4d_values_are_nhwc_others_keep_torch_order(tmp_path):
    module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Linear(64, 2))
    case = lower_case(module, [(1, 3, 6, 6)], tmp_path)
    gm, ctx = graph_before(case.path("quantized.pt2"), "annotate_layout")
    annotate_layout_pass.run(gm, ctx)
    orders = {n.name: n.meta.get("tosa_dim_order") for n in gm.graph.nodes}
    assert orders["input"] == NHWC and orders["conv2d"] == NHWC
    assert orders["flatten"] == (0, 1) and orders["linear"] == (0, 1)
