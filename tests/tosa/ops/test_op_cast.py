"""_to_copy (``.float()``, ``.bool()``, ``.to(dtype)``) between bool, integer and quantized
float values -> CAST (+ RESCALE into a quantized float)."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, booleans, integers, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class MaskToFloat(nn.Module):
    """An int64 attention mask and a bool mask turned float and used in float arithmetic."""

    def forward(self, x, mask, keep):
        return x * mask.to(x.dtype) + keep.float() * 0.5


class Conversions(nn.Module):
    """int64 -> bool, bool -> int32, int64 -> int32 (a no-op in the graph), float -> bool."""

    def forward(self, x, ids):
        return ids.bool(), (ids > 3).int(), ids.to(torch.int32) + 1, torch.relu(x).bool()


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_masks_turned_float(dtype, tmp_path):
    """``quantize(float(mask))`` as one RESCALE of the integer by 1 / scale."""
    shapes = [(2, 6), booleans((2, 6), dtype=torch.int64), booleans((2, 6))]
    case, report = run_case(MaskToFloat(), shapes, tmp_path, dtype)
    assert report["passed"]
    assert "CAST" in case.ops()  # the bool input


@pytest.mark.parametrize("dtype", [INT8, FP])
def test_integer_and_bool_conversions(dtype, tmp_path):
    case, report = run_case(Conversions(), [(2, 6), integers((2, 6), 6)], tmp_path, dtype)
    assert report["passed"]
    assert [o["dtype"] for o in case.io()["outputs"]] == ["bool", "int32", "int32", "bool"]
