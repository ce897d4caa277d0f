"""logical_and / or / xor / not and bitwise ops of bool masks (``a & b``, ``~m``) and of
integers -> LOGICAL_* / BITWISE_*: exact."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, FP, INT8, booleans, integers, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class CombineMasks(nn.Module):
    """A padding mask combined with a constant causal mask, the ways models write it."""

    def __init__(self):
        super().__init__()
        self.register_buffer("causal", torch.ones(6, 6, dtype=torch.bool).tril())

    def forward(self, pad, other):
        both = pad[:, None, :] & self.causal
        return both, torch.logical_or(pad, other), pad ^ other, ~pad, torch.logical_not(other)


class IntegerBits(nn.Module):
    """Bitwise ops of integers, and logical ops of integers (non-zero is True)."""

    def forward(self, a, b):
        return a & b, a | b, ~a, torch.logical_and(a, b)


@pytest.mark.parametrize("dtype", [INT8, FP])
def test_bool_masks(dtype, tmp_path):
    case, report = run_case(CombineMasks(), [booleans((2, 6)), booleans((2, 6))], tmp_path, dtype)
    assert report["passed"]
    assert {"LOGICAL_AND", "LOGICAL_OR", "LOGICAL_XOR", "LOGICAL_NOT"} <= set(case.ops())


def test_integer_bits(tmp_path):
    case, report = run_case(IntegerBits(), [integers((2, 5), 8), integers((2, 5), 8)], tmp_path)
    assert report["passed"]
    assert {"BITWISE_AND", "BITWISE_OR", "BITWISE_NOT", "LOGICAL_AND"} <= set(case.ops())


class BitsWithNumbers(nn.Module):
    """The Scalar forms: ``ids & 1``, ``flags | 4``, ``x ^ 0xFF``, and on a bool mask."""

    def forward(self, a, mask):
        return a & 1, a | 4, a ^ 0xFF, a & -16, mask & True, mask ^ True


@pytest.mark.parametrize("dtype", [INT8, FP])
def test_bitwise_with_numbers(dtype, tmp_path):
    ids = lambda g: torch.randint(-3000, 3000, (3, 257), generator=g)  # noqa: E731
    case, report = run_case(BitsWithNumbers(), [ids, booleans((3, 257))], tmp_path, dtype)
    assert report["passed"]
    assert all(o["max_abs_diff"] == 0 for o in report["outputs"])
    assert {"BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "LOGICAL_AND", "LOGICAL_XOR"} <= set(
        case.ops()
    )


class NarrowBits(nn.Module):
    """Bit fiddling on int8 / int16 tensors (packed flags, sensor words), with numbers too."""

    def forward(self, a, b):
        return a & b, a | b, a ^ b, ~a, a & 7, a >> 2, a << 1


@pytest.mark.parametrize("int_dtype", [torch.int8, torch.int16])
def test_bitwise_on_int8_and_int16_tensors(int_dtype, tmp_path):
    """TOSA's BITWISE_* and shifts take int8 and int16 operands as they are (no CAST);
    integer tensors are never quantized, whatever the scheme."""
    low, high = (-128, 128) if int_dtype == torch.int8 else (-3000, 3000)

    def words(g):
        return torch.randint(low, high, (2, 3, 8), generator=g, dtype=int_dtype)

    case, report = run_case(NarrowBits(), [words, words], tmp_path, A16W8)
    assert report["passed"]
    assert all(output["max_abs_diff"] == 0 for output in report["outputs"])
    assert "CAST" not in case.ops()
    dtype = "int8" if int_dtype == torch.int8 else "int16"
    assert [entry["dtype"] for entry in case.io()["inputs"]] == [dtype, dtype]
