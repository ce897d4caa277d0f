"""PAD (a constant pad no conv2d absorbs): reference model against torch, over shapes/types."""

import pytest
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Pad(nn.Module):
    def __init__(self, pads, value=0.0):
        super().__init__()
        self.pads, self.value = pads, value

    def forward(self, x):
        return nn.functional.pad(x, self.pads, value=self.value)


class PadThenPool(nn.Module):
    def __init__(self, pads, value=0.0):
        super().__init__()
        self.pad = Pad(pads, value)

    def forward(self, x):
        return nn.functional.max_pool2d(self.pad(x), 2)


SHAPES = [
    pytest.param(Pad((1, 2, 3, 0)), (1, 3, 5, 6), id="nchw_hw_asymmetric"),
    pytest.param(PadThenPool((1, 1, 1, 1)), (1, 4, 6, 6), id="before_maxpool"),
    pytest.param(Pad((0, 0, 0, 0, 2, 1)), (1, 3, 4, 4), id="channels"),
    pytest.param(Pad((2, 3), value=0.25), (2, 7), id="rank2_value"),
]


@pytest.mark.parametrize("module, shape", SHAPES)
def test_pad_int8_matches_torch(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert case.ops()[0] == "PAD"


@pytest.mark.parametrize("dtype", [A16W8, FP])
def test_pad_other_types_match_torch(dtype, tmp_path):
    case, report = run_case(Pad((1, 1, 2, 0)), [(1, 2, 4, 4)], tmp_path, dtype)
    assert report["passed"]
    assert case.ops() == ["PAD"]


def test_reflect_pad_is_unsupported(tmp_path):
    from pipeline.errors import UnsupportedOperatorError

    class Reflect(nn.Module):
        def forward(self, x):
            return nn.functional.pad(x, (1, 1, 1, 1), mode="reflect")

    with pytest.raises(UnsupportedOperatorError):
        run_case(Reflect(), [(1, 2, 4, 4)], tmp_path)
