"""The rounding functions - floor, ceil, round (with decimals), trunc, sign, division by a
number with a rounding mode - quantized (int8 TABLE, int16 fixed point proved exact over
every code when lowering) and in float: the TOSA reference model against torch."""

import numpy as np
import pytest
import torch

from models.cases import Lambda, uniform
from tests.tosa.lowering_cases import A16W8, FP, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

CASES = [
    pytest.param(Lambda(lambda x: x.clone().floor_()), uniform((1, 3, 8, 8), -4, 4), id="floor_inplace"),
    pytest.param(Lambda(torch.ceil), uniform((800,), -4, 4), id="ceil_rank1_800"),
    pytest.param(Lambda(torch.round), uniform((3, 257), -4, 4), id="round_257"),
    pytest.param(Lambda(lambda x: torch.round(x, decimals=1)), uniform((2, 3, 4, 5, 6), -2, 2), id="round_decimals_rank5"),
    pytest.param(Lambda(torch.trunc), uniform((1, 1, 1), -4, 4), id="trunc_size1"),
    pytest.param(Lambda(torch.sign), uniform((3, 3), -2, 2), id="sign"),
    pytest.param(Lambda(lambda x: torch.div(x, 0.3, rounding_mode="floor")), uniform((4, 16), -2, 2), id="div_floor"),
    pytest.param(Lambda(lambda x: torch.div(x, -0.7, rounding_mode="trunc")), uniform((4, 16), -2, 2), id="div_trunc_negative"),
    pytest.param(Lambda(lambda x: x // 0.25), uniform((1, 4, 5, 6), -2, 2), id="floor_divide"),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize("module, spec", CASES)
def test_rounding_matches_torch_exactly(module, spec, dtype, tmp_path):
    """int8: one TABLE; int16: integer arithmetic whose every code was checked against torch,
    so every layer and output equals torch's integers."""
    case, report = run_case(module, [spec], tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] == 0
    computed = [layer for layer in report["layers"] if layer["check"] != "input"]
    assert computed and all(layer["max_abs_diff_int"] == 0 for layer in computed)
    if dtype == INT8:
        assert case.ops() == ["TABLE"]
    else:
        assert "TABLE" not in case.ops()


@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize(
    "module, spec",
    [
        pytest.param(Lambda(lambda x: x % 0.5), uniform((2, 16), -2, 2), id="remainder"),
        pytest.param(Lambda(lambda x: torch.fmod(x, -0.5)), uniform((2, 16), -2, 2), id="fmod"),
        pytest.param(Lambda(lambda x: torch.remainder(x, -0.3)), uniform((800,), -3, 3), id="remainder_negative_800"),
    ],
)  # fmt: skip
def test_remainder_by_a_number(module, spec, dtype, tmp_path):
    """int8: one TABLE; int16: the fraction of the fixed-point quotient, ``y - (n << k)``,
    times ``c`` (one LSB from torch's float32 graph at a rounding tie)."""
    case, report = run_case(module, [spec], tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] <= (0 if dtype == INT8 else 1)
    assert case.ops() == ["TABLE"] if dtype == INT8 else "LOGICAL_LEFT_SHIFT" in case.ops()


def test_no_exact_program_is_refused(monkeypatch, tmp_path):
    """A program that differs from torch anywhere but at a rounding tie is never emitted."""
    from pipeline.errors import UnsupportedOperatorsError
    from pipeline.tosa.functions import rounding

    wrong = rounding._program

    def off_by_one_code(step, x_q, out_q, k):
        return [(o, op, *((a[0], a[1] * 1.001, *a[2:]) if op == "RESCALE" else a))
                for o, op, *a in wrong(step, x_q, out_q, k)]  # fmt: skip

    monkeypatch.setattr(rounding, "_program", off_by_one_code)
    with pytest.raises(UnsupportedOperatorsError, match="floor.*no integer form rounds"):
        run_case(Lambda(torch.floor), [uniform((2, 16), -4, 4)], tmp_path, A16W8)


@pytest.mark.parametrize(
    "module, spec",
    [
        pytest.param(Lambda(torch.round), lambda g: torch.arange(-40, 40).float() / 4, id="round_ties"),
        pytest.param(Lambda(torch.trunc), uniform((2, 16), -4, 4), id="trunc"),
        pytest.param(Lambda(lambda x: torch.div(x, 0.3, rounding_mode="trunc")), uniform((2, 16), -3, 3), id="div_trunc"),
    ],
)  # fmt: skip
def test_rounding_in_float_matches_torch(module, spec, tmp_path):
    case, report = run_case(module, [spec], tmp_path, FP)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff"] == 0


def test_the_checked_program_is_what_is_emitted():
    """``_run`` (numpy) and ``emit_step`` read the same instructions: floor in fixed point is
    a RESCALE, an ADD of -2**(k-1) and a rounding shift, exact here for every code."""
    from pipeline.tosa.quant_math import QParams
    from pipeline.tosa.functions.rounding import CODES, Step, _program, _run

    x_q = QParams((4 / 32767,), 0, "int16", -32767, 32767)
    out_q = QParams((4.1 / 32767,), 0, "int16", -32767, 32767)
    prog = _program(Step("floor"), x_q, out_q, 15)
    assert [op for _, op, *_ in prog] == ["RESCALE", "ADD", "ASR", "RESCALE"]
    expected = np.round(np.floor(CODES * (4 / 32767)) / (4.1 / 32767))
    assert np.array_equal(np.clip(_run(prog, False), -32767, 32767), np.clip(expected, -32767, 32767))
