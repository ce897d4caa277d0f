"""``a % b`` / ``torch.fmod(a, b)`` by a tensor: integers -> INTDIV arithmetic; floats are
written out before quantization (``pipeline/normalise/division.py``) and verified per layer."""

import pytest
import torch

from models.cases import Lambda, spans, uniform
from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def test_integer_remainders_by_tensors(tmp_path):
    module = Lambda(lambda a, b: (a % b, torch.fmod(a, b), torch.remainder(a, -b)))
    divisors = spans((2, 3, 8), 1, 20)
    case, report = run_case(module, [spans((2, 3, 8), -500, 500), divisors], tmp_path)
    assert report["passed"] and all(o["max_abs_diff"] == 0 for o in report["outputs"])
    assert "INTDIV" in case.ops()


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize("fn", [torch.remainder, torch.fmod], ids=["remainder", "fmod"])
def test_float_remainders_by_tensors(fn, dtype, tmp_path):
    """``a - b * floor(a * reciprocal(b))``: reciprocal and floor TABLEs (int16: fixed point),
    MULs and a SUB, each layer against torch's quantized graph of the same form."""
    module = Lambda(lambda a, b: fn(a, b))
    case, report = run_case(module, [uniform((1, 4, 8), -6, 6), uniform((1, 4, 1), 0.5, 3)],
                            tmp_path, dtype)  # fmt: skip
    assert report["passed"]
    assert all(o.get("max_abs_diff_int", 0) <= 1 for o in report["outputs"])
