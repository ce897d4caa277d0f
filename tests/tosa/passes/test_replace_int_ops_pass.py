"""replace_int_ops (Ethos-U55/U65 variant): the flooring right shift, bitwise operators with
a number and bitwise not as shifts, ADD and SUB give the common graph's integers exactly over
wide ranges (negative values, every bit pattern of the mask), and leave no operator Vela
refuses there."""

import pytest
import torch

from pipeline.tosa.flatbuffer import operator_names
from pipeline.ethosu.placement import read_operators, violations
from pipeline.tosa.passes.replace_int_ops_pass import _runs
from models.cases import Lambda, spans
from tests.tosa.lowering_cases import A16W8, integers, run_case, run_vela

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]
MASKS = (1, 0xFF, 0x55, 0xF0F0, -16, -1, 0, 0x7FFFFFFF, -(2**31))


class Bits(torch.nn.Module):
    def forward(self, a, amounts):
        outputs = [a >> 0, a >> 1, a >> 7, a >> 31, a >> amounts, ~a]
        for mask in MASKS:
            outputs += [a & mask, a | mask, a ^ mask]
        return tuple(outputs)


@pytest.mark.parametrize("low, high", [(-(2**30), 2**30), (-(2**31), -(2**31) + 2**16),
                                       (2**31 - 2**16, 2**31)])  # fmt: skip
def test_u55_variant_gives_the_same_integers(low, high, tmp_path):
    """Also at the ends of int32, where taking half a step off would overflow."""
    values = spans((4, 256), low, high)
    case, report = run_case(Bits(), [values, integers((4, 256), 31)], tmp_path)
    variant = report["variants"]["u55"]
    assert report["passed"] and variant["passed"]
    assert all(o["max_abs_diff"] == 0 for o in report["outputs"] + variant["outputs"])
    ops = set(operator_names(case.variant("u55")))
    assert not ops & {"BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "BITWISE_NOT"}
    assert not list(violations(read_operators(case.variant("u55")), "ethos-u55-128"))


def test_bitwise_of_two_tensors_stays_for_the_pre_vela_check(tmp_path):
    """No cheap exact form: the check names the operator and the model line."""
    case, _ = run_case(Lambda(lambda a, b: a & b), [integers((2, 8), 100)] * 2, tmp_path)
    found = list(violations(read_operators(case.variant("u55")), "ethos-u55-128"))
    assert len(found) == 1 and "BITWISE_AND" in found[0]


def test_runs_of_set_bits():
    assert _runs(0b1011_0110) == [(1, 3), (4, 6), (7, 8)]
    assert _runs(0xFFFFFFF0) == [(4, 32)]
    assert _runs(0) == []


class NarrowLeftShifts(torch.nn.Module):
    """int8 and int16 ``<<`` wrap in torch (``-100 << 2`` is ``112`` in int8)."""

    def forward(self, a, amounts):
        small, wide = a.to(torch.int8), (a * 200).to(torch.int16)
        by = amounts.to(torch.int8)
        wide_by = by.to(torch.int16)
        return (small << 1, small << 7, torch.bitwise_left_shift(small, by),
                wide << 3, wide << 15, torch.bitwise_left_shift(wide, wide_by))  # fmt: skip


def test_u55_variant_wraps_int8_and_int16_left_shifts(tmp_path):
    """Vela 5.2 shifts only int32 on Ethos-U55 ('Non-passthrough operation'): the variant
    shifts in int32 and wraps, the same integers as torch, and Vela compiles it."""
    inputs = [spans((4, 64), -128, 128), integers((4, 64), 8)]
    case, report = run_case(NarrowLeftShifts(), inputs, tmp_path, A16W8)  # int16 tensors
    variant = report["variants"]["u55"]
    assert report["passed"] and variant["passed"]
    assert all(o["max_abs_diff"] == 0 for o in report["outputs"] + variant["outputs"])
    narrow = [op for op in read_operators(case.variant("u55")) if op.op == "LOGICAL_LEFT_SHIFT"
              and op.outputs[0].dtype != "int32"]  # fmt: skip
    assert not narrow
    assert not list(violations(read_operators(case.variant("u55")), "ethos-u55-128"))
    figures = run_vela(case.variant("u55"), "ethos-u55-128", tmp_path / "vela")
    assert figures["npu_op_share"] == 1.0
