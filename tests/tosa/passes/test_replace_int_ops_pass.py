"""replace_int_ops (Ethos-U55/U65 variant): the flooring right shift, bitwise operators with
a number and bitwise not as shifts, ADD and SUB give the common graph's integers exactly over
wide ranges (negative values, every bit pattern of the mask), and leave no operator Vela
refuses there."""

import pytest
import torch

from pipeline.tosa.flatbuffer import operator_names
from pipeline.tosa.npu_constraints import read_operators, violations
from pipeline.tosa.passes.replace_int_ops_pass import _runs
from tests.tosa.elementwise_cases import Lambda, spans
from tests.tosa.lowering_cases import integers, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]
MASKS = (1, 0xFF, 0x55, 0xF0F0, -16, -1, 0, 0x7FFFFFFF, -(2**31))


class Bits(torch.nn.Module):
    def forward(self, a, amounts):
        outputs = [a >> 0, a >> 1, a >> 7, a >> 31, a >> amounts, ~a]
        for mask in MASKS:
            outputs += [a & mask, a | mask, a ^ mask]
        return tuple(outputs)


def test_u55_variant_gives_the_same_integers(tmp_path):
    values = spans((4, 256), -(2**30), 2**30)
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
