import pytest
from torch import nn

from pipeline.tosa.passes import fold_pad_pass
from tests.tosa.lowering_cases import count_targets, graph_before, lower_case

pytestmark = pytest.mark.needs_torch


class PadConv(nn.Module):
    def __init__(self, pads, value=0.0):
        super().__init__()
        self.pads, self.value = pads, value
        self.conv = nn.Conv2d(2, 3, 3, padding=1)

    def forward(self, x):
        return self.conv(nn.functional.pad(x, self.pads, value=self.value))


def _run(module, tmp_path):
    case = lower_case(module, [(1, 2, 7, 6)], tmp_path)
    gm, ctx = graph_before(case.path("quantized.pt2"), "fold_pad")
    assert count_targets(gm, "aten.pad.default") == 1
    fold_pad_pass.run(gm, ctx)
    conv = next(n for n in gm.graph.nodes if str(n.target) == "aten.conv2d.default")
    return gm, conv


def test_zero_pad_moves_into_the_conv(tmp_path):
    gm, conv = _run(PadConv((1, 2, 0, 3)), tmp_path)
    assert count_targets(gm, "aten.pad.default") == 0
    assert conv.meta["extra_pad"] == (0, 3, 1, 2)  # top, bottom, left, right
    assert conv.args[0].op == "placeholder"


def test_nonzero_pad_stays(tmp_path):
    gm, conv = _run(PadConv((1, 1, 1, 1), value=0.5), tmp_path)
    assert count_targets(gm, "aten.pad.default") == 1
    assert "extra_pad" not in conv.meta
