import json

import pytest
from torch import nn

from pipeline.errors import VerificationError
from pipeline.stages.verify import verify
from tests.tosa.lowering_cases import lower_case, verify_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def test_report_figures(tmp_path):
    case = lower_case(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()), [(1, 3, 6, 6)], tmp_path)
    report = verify_case(case, where="u85/verify")
    assert report == json.loads(case.path("report.json").read_text())
    assert report["passed"] and report["samples"] == 2
    assert "RESCALE" in report["tolerance_reason"]
    out = report["outputs"][0]
    assert out["tolerance"] == 1 and out["elements"] == 2 * 4 * 4 * 4
    assert set(out) >= {"max_abs_diff_int", "exact_match_fraction", "sqnr_db_vs_float"}


def test_graph_without_rounding_must_match_exactly(tmp_path):
    case = lower_case(nn.MaxPool2d(2), [(1, 3, 6, 6)], tmp_path)
    report = verify_case(case)
    assert report["outputs"][0]["tolerance"] == 0
    assert report["tolerance_reason"].startswith("graph has no rounding operators")


def test_mismatch_raises_with_figures(tmp_path):
    case = lower_case(nn.MaxPool2d(2), [(1, 3, 6, 6)], tmp_path)
    io = case.io()
    io["outputs"][0]["zero_point"] += 3  # what a zero-point bug in the lowering would do
    case.path("io.json").write_text(json.dumps(io))
    with pytest.raises(
        VerificationError,
        match=r"^u85/verify: output max_pool2d of the TOSA "
        r"reference model must match torch within \+-0 .*; got max \|diff\| 3, "
        r"exact-match fraction 0.0000",
    ):
        verify(
            case.path("model.pt2"),
            case.path("quantized.pt2"),
            case.tosa,
            case.path("io.json"),
            case.path("test_inputs.pt"),
            case.path("report.json"),
            where="u85/verify",
        )
    assert json.loads(case.path("report.json").read_text())["passed"] is False


@pytest.mark.parametrize(
    "ops, types, expected",
    [
        pytest.param(["MAX_POOL2D", "RESHAPE"], [], (0, 1.0), id="no_rounding_exact"),
        pytest.param(["CONV2D", "RESCALE"], ["int32"], (1, 0.8), id="scale32_rounding"),
        pytest.param(["CONV2D", "RESCALE"] * 3, ["int48"] * 3, (3, 0.0), id="scale16_per_rescale"),
    ],
)
def test_tolerance_policy(ops, types, expected):
    from pipeline.stages.verify import tolerance_policy

    tolerance, min_exact, reason = tolerance_policy(ops, types)
    assert (tolerance, min_exact) == expected
    assert ("16-bit multipliers" in reason) is ("int48" in types)


@pytest.mark.parametrize(
    "ops, tables, expected",
    [
        pytest.param(["TABLE"], [("int8", 12)], (0, 1.0), id="table_alone_is_exact"),
        pytest.param(["RESCALE", "TABLE"], [("int8", 1)], (2, 0.8), id="flat_table_plus_1"),
        pytest.param(
            ["RESCALE", "TABLE", "TABLE"], [("int8", 3), ("int8", 12)], (13, 0.8),
            id="steepest_table_plus_1",
        ),
        pytest.param(
            ["TABLE", "RESCALE"], [("int16", 2)], (3, 0.0), id="int16_interpolated_not_enforced"
        ),
    ],
)  # fmt: skip
def test_tolerance_policy_behind_tables(ops, tables, expected):
    from pipeline.stages.verify import tolerance_policy

    tolerance, min_exact, reason = tolerance_policy(ops, ["int32"], tables)
    assert (tolerance, min_exact) == expected
    assert ("largest step" in reason) is (expected[0] > 0)


def _runs(offsets, scale=0.01):
    """One sample: ideal values on a fine grid, torch's quantized reference, TOSA output =
    torch's integers + ``offsets``."""
    import numpy as np

    ideal = np.linspace(-1.0, 1.0, 200)
    reference = np.round(ideal / scale) * scale
    got = np.round(reference / scale).astype(np.int64) + offsets
    return [(got, reference, ideal)]


@pytest.mark.parametrize(
    "offsets, passed",
    [
        pytest.param([1] * 10 + [0] * 190, True, id="sparse_ties_add_under_lsb2_over_12"),
        pytest.param([1] * 200, False, id="systematic_plus_1_fails_the_sqnr_rule"),
    ],
)
def test_sqnr_rule_catches_systematic_offsets_only(offsets, passed):
    import numpy as np

    from pipeline.stages.verify import _compare_int

    entry = {"name": "y", "scale": 0.01, "zero_point": 0}
    result = _compare_int(entry, _runs(np.array(offsets)), tolerance=1, min_exact=0.0)
    assert result["passed"] is passed
