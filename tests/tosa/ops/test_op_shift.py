"""``<<``, ``>>``, bitwise_left_shift / bitwise_right_shift of integer tensors ->
LOGICAL_LEFT_SHIFT / ARITHMETIC_RIGHT_SHIFT: exact, in both profiles."""

import pytest
import torch

from models.cases import Lambda, spans
from tests.tosa.lowering_cases import FP, INT8, integers, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Shifts(torch.nn.Module):
    """The ways models write shifts, in-place ones on a computed value."""

    def forward(self, a, amounts):
        b = a + 0
        b <<= 1
        return (a << 2, a >> 3, torch.bitwise_left_shift(a, 4), torch.bitwise_right_shift(a, 1),
                a >> amounts, torch.bitwise_left_shift(a, amounts), b, a >> 40)  # fmt: skip


@pytest.mark.parametrize("dtype", [INT8, FP])
@pytest.mark.parametrize("shape", [(800,), (2, 3, 4, 5, 6), (1, 1)], ids=["rank1_800", "rank5", "size1"])
def test_shifts_match_torch(shape, dtype, tmp_path):
    case, report = run_case(Shifts(), [spans(shape, -5000, 5000), integers(shape, 8)], tmp_path, dtype)
    assert report["passed"]
    assert all(o["max_abs_diff"] == 0 for o in report["outputs"])
    assert {"LOGICAL_LEFT_SHIFT", "ARITHMETIC_RIGHT_SHIFT"} <= set(case.ops())


def test_left_shift_past_int32_is_refused(tmp_path):
    from pipeline.errors import UnsupportedOperatorsError

    with pytest.raises(UnsupportedOperatorsError, match=r"shift 40.*\[0, 31\]"):
        run_case(Lambda(lambda a: a << 40), [integers((2, 3), 8)], tmp_path)
