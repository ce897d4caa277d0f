"""_to_copy (``.float()``, ``.bool()``, ``.to(dtype)``, ``.long()``) between bool, integer
and quantized float values -> CAST (+ RESCALE into a quantized float; a quantized float made
an integer: TABLE or fixed-point truncation)."""

import pytest
import torch
from torch import nn

from pipeline.ethosu.placement import check_npu_constraints
from tests.tosa.lowering_cases import (
    A16W8,
    FP,
    INT8,
    Fn,
    booleans,
    integers,
    run_case,
    run_vela,
)

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


def int_input(shape, low, high, dtype):
    return lambda g: torch.randint(low, high, shape, generator=g, dtype=dtype)


TO_INTEGER = [
    pytest.param(Fn(lambda m, x: (x * 4).to(torch.int32)), [(1, 2, 3, 4)], ["TABLE", "CAST"],
                 id="int32_one_table"),
    pytest.param(Fn(lambda m, x: (x * 1000).long() + 3), [(2, 50)], ["ABS"], id="int64_wide"),
    pytest.param(Fn(lambda m, x: (x * 300).to(torch.int8)), [(2, 50)], ["TABLE"],
                 id="int8_wraps"),
    pytest.param(Fn(lambda m, x: x.int()), [((3, 7), 20.0)], ["TABLE", "CAST"], id="negative"),
    pytest.param(Fn(lambda m, x: m[0]((x.abs() * 9.99).long()), nn.Embedding(10, 4)), [(2, 6)],
                 ["GATHER"], id="index_from_floats"),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize("module, shapes, ops", TO_INTEGER)
def test_quantized_floats_made_integers_truncate_like_torch(module, shapes, ops, dtype, tmp_path):
    """torch truncates toward zero (and wraps past int8): int8 as one TABLE of the 256 codes
    when the values fit int8, else (and int16) ``rounding.py``'s fixed-point truncation,
    checked over every code when lowering; integer outputs must match bit for bit."""
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    if dtype == INT8:
        assert set(ops) <= set(case.ops())


@pytest.mark.parametrize("module, shapes, ops", [p for p in TO_INTEGER if p.id != "int8_wraps"])
def test_floats_made_integers_in_the_fp_profile(module, shapes, ops, tmp_path):
    """FLOOR above 0, CEIL below, then a CAST of the whole value (the FP profile has no int8
    tensors: ``.to(torch.int8)`` is refused by the spec check, naming the tensor)."""
    case, report = run_case(module, shapes, tmp_path, FP)
    assert report["passed"] and report["outputs"][0]["max_abs_diff"] == 0
    assert {"FLOOR", "CEIL", "CAST"} <= set(case.ops())


@pytest.mark.parametrize(
    "module, shapes, dtype",
    [
        pytest.param(Fn(lambda m, x: x.to(torch.int32) * 300), [int_input((4, 8), -128, 128,
                     torch.int8)], INT8, id="int8_widened"),
        pytest.param(Fn(lambda m, x: (x * 7).to(torch.int8)), [int_input((4, 8), -1000, 1000,
                     torch.int32)], INT8, id="int32_narrowed_wraps"),
        pytest.param(Fn(lambda m, x: x.to(torch.int8)), [int_input((2, 4, 8), -30000, 30000,
                     torch.int16)], A16W8, id="int16_narrowed_wraps"),
        pytest.param(Fn(lambda m, x: x.to(torch.int16) + 1), [int_input((4, 8), -70000, 70000,
                     torch.int64)], A16W8, id="int64_to_int16"),
    ],
)  # fmt: skip
def test_integer_widening_and_narrowing_like_torch(module, shapes, dtype, tmp_path):
    """Integers are never quantized: CAST (narrowing wraps, as torch's conversions do)."""
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"] and report["outputs"][0]["max_abs_diff"] == 0
    assert "CAST" in case.ops() and "RESCALE" not in case.ops()


@pytest.mark.needs_vela
@pytest.mark.parametrize("accelerator", ["ethos-u55-128", "ethos-u85-256"])
def test_floats_made_integers_run_on_the_npu(accelerator, tmp_path):
    module = Fn(lambda m, x: ((x * 4).to(torch.int32) + 1, (x * 1000).long() * 2))
    case, _ = run_case(module, [(1, 2, 3, 4)], tmp_path / "case")
    variant = case.variant(accelerator.split("-")[1])
    check_npu_constraints(variant, accelerator)
    assert run_vela(variant, accelerator, tmp_path / "vela")["npu_op_share"] == 1.0
