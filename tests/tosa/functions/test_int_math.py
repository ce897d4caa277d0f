"""Integer tensors (int64 ids, int32 in the graph, never quantized): abs/neg/sign, floor and
trunc division and remainders by numbers (RESCALE forms every Ethos-U runs) and by tensors
(INTDIV), in the integer and the float profile - exactly torch's integers."""

import pytest
import torch

from models.cases import Lambda, spans
from tests.tosa.lowering_cases import FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

DIVISORS = (1, 2, 3, 4, 6, 7, 12, 1000, -6, -8)


class DivideByNumbers(torch.nn.Module):
    """Every rounding of every divisor kind: odd, powers of two, other even, negative."""

    def forward(self, a):
        outputs = []
        for c in DIVISORS:
            outputs += [a // c, a % c, torch.div(a, c, rounding_mode="trunc"), torch.fmod(a, c)]
        return tuple(outputs)


def _exact(report) -> bool:
    return report["passed"] and all(o["max_abs_diff"] == 0 for o in report["outputs"])


@pytest.mark.parametrize("dtype", [INT8, FP])
def test_division_by_numbers_is_exact_over_a_wide_range(dtype, tmp_path):
    """4000 values in [-20000, 20000) per input set; RESCALE forms (INTDIV in FP graphs)."""
    case, report = run_case(DivideByNumbers(), [spans((4, 1000), -20000, 20000)], tmp_path, dtype)
    assert _exact(report)
    assert ("INTDIV" in case.ops()) == (dtype == FP)


@pytest.mark.parametrize("dtype", [INT8, FP])
def test_division_by_tensors_uses_intdiv(dtype, tmp_path):
    module = Lambda(lambda a, b: (torch.div(a, b, rounding_mode="floor"),
                                  torch.div(a, b, rounding_mode="trunc"), a % b, torch.fmod(a, b)))  # fmt: skip
    divisors = lambda g: torch.randint(1, 9, (2, 3, 8), generator=g) * (  # noqa: E731
        torch.randint(0, 2, (2, 3, 8), generator=g) * 2 - 1)
    case, report = run_case(module, [spans((2, 3, 8), -500, 500), divisors], tmp_path, dtype)
    assert _exact(report)
    assert "INTDIV" in case.ops()


def test_unary_functions_of_integers(tmp_path):
    module = Lambda(lambda a: (torch.abs(a), -a, torch.sign(a), torch.floor(a), a.neg().abs()))
    case, report = run_case(module, [spans((3, 257), -50, 50)], tmp_path)
    assert _exact(report)
    assert "RESCALE" not in case.ops() and "TABLE" not in case.ops()


def test_narrow_integer_types_cast_through_int32(tmp_path):
    """torch.int8 / int16 tensors (not quantized values): CAST up, divide, CAST back."""
    module = Lambda(lambda a: (torch.div(a, 3, rounding_mode="floor"), a % 5))
    int8s = lambda g: torch.randint(-128, 128, (4, 8), generator=g, dtype=torch.int8)  # noqa: E731
    case, report = run_case(module, [int8s], tmp_path)
    assert _exact(report)
    assert case.io()["inputs"][0]["dtype"] == "int8"


class WidthsTosaRestricts(torch.nn.Module):
    """What TOSA's CLAMP, MAX_POOL2D and ADD/SUB do not take for every integer width: a
    clamp of int32 counts, every other int32 row, and int8 / int16 sums that wrap."""

    def forward(self, counts, rows, small, words):
        return (torch.clamp(counts, -10, 10), torch.clamp(counts, min=0), rows[:, ::2],
                small + small, words - small.to(torch.int16))  # fmt: skip


def test_integer_widths_tosa_restricts_stay_valid_and_exact(tmp_path):
    """CLAMP has no int32 form (MAXIMUM/MINIMUM instead), MAX_POOL2D no int32 (a stride by
    reshapes and a slice), ADD/SUB/MUL only int32 (int8/int16 CAST up, then back: torch
    wraps int8 sums the same way); the reference model runs the graph and agrees exactly."""

    def ints(shape, low, high, dtype):
        return lambda g: torch.randint(low, high, shape, generator=g, dtype=dtype)

    inputs = [
        ints((2, 3), -100, 100, torch.int32),
        ints((2, 6, 4), -1000, 1000, torch.int32),
        ints((2, 5), -128, 128, torch.int8),
        ints((2, 5), -30000, 30000, torch.int16),
    ]
    case, report = run_case(WidthsTosaRestricts(), inputs, tmp_path, "a16w8")
    assert _exact(report)
    assert "CLAMP" not in case.ops() and "MAX_POOL2D" not in case.ops()
