"""SLICE (aten.slice.Tensor) and the squeeze/unsqueeze views around it: exact against torch."""

import pytest
from torch import nn

from pipeline.errors import UnsupportedOperatorError
from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Slice(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


SHAPES = [
    pytest.param(Slice(lambda x: x[:, 1:3]), (1, 4, 5, 6), ["SLICE"], id="nhwc_channels"),
    pytest.param(Slice(lambda x: x[..., -3:]), (2, 7), ["SLICE"], id="rank2_negative_start"),
    pytest.param(
        Slice(lambda x: x[:, :1].squeeze(1).unsqueeze(-1)), (1, 4, 6), ["SLICE", "RESHAPE"],
        id="cls_token_squeeze_unsqueeze",
    ),
]  # fmt: skip


@pytest.mark.parametrize("module, shape, ops", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_slice_matches_torch_exactly(module, shape, ops, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0].get("max_abs_diff_int", 0) == 0
    assert case.ops() == ops


def test_strided_slice_is_unsupported(tmp_path):
    with pytest.raises(UnsupportedOperatorError, match="step=2"):
        run_case(Slice(lambda x: x[..., ::2]), [(1, 4, 6)], tmp_path)
