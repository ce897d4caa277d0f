import json

import pytest
import torch
from torch import nn

from pipeline.errors import VerificationError
from tests.tosa.lowering_cases import FP, lower_case, verify_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def _verify(case, where="u85/verify"):
    """verify() on a case without its NPU variants."""
    return verify_case(case, where, variants=False)


def test_report_figures(tmp_path):
    case = lower_case(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()), [(1, 3, 6, 6)], tmp_path)
    report = verify_case(case, where="u85/verify")
    assert report == json.loads(case.path("report.json").read_text())
    assert report["passed"] and report["samples"] == 2
    assert "RESCALE" in report["tolerance_reason"]
    out = report["outputs"][0]
    assert out["tolerance"] == 1 and out["elements"] == 2 * 4 * 4 * 4
    assert set(out) >= {"max_abs_diff_int", "exact_match_fraction", "sqnr_db_vs_float"}
    graph_input, conv = report["layers"]
    assert graph_input["check"] == "input"
    assert (conv["op"], conv["tosa"], conv["check"], conv["tolerance"]) == (
        "conv2d+relu",
        "CONV2D+RESCALE",
        "bounded",
        1,
    )
    assert 0.5 <= conv["bound"] < 0.501 and conv["beyond_bound"] == 0
    assert set(report["layer_checks"]) == {"input", "bounded"}


def test_graph_without_rounding_must_match_exactly(tmp_path):
    case = lower_case(nn.MaxPool2d(2), [(1, 3, 6, 6)], tmp_path)
    report = verify_case(case)
    assert report["outputs"][0]["tolerance"] == 0
    assert "graph has no rounding operators" in report["tolerance_reason"]
    pool = report["layers"][-1]
    assert (pool["tosa"], pool["check"], pool["bound"], pool["tolerance"]) == (
        "MAX_POOL2D",
        "exact",
        0.0,
        0,
    )
    assert pool["exact_match_fraction"] == 1.0


def test_wrong_output_zero_point_fails_the_sqnr_rule(tmp_path):
    case = lower_case(nn.MaxPool2d(2), [(1, 3, 6, 6)], tmp_path)
    io = case.io()
    io["outputs"][0]["zero_point"] += 3  # what a zero-point bug in io.json would do
    case.path("io.json").write_text(json.dumps(io))
    with pytest.raises(
        VerificationError,
        match=r"^u85/verify: output max_pool2d of the TOSA reference model must have an SQNR vs "
        r"float at most 2.41 dB below torch's quantized graph's \(1.0 dB plus the uncertainty of "
        r"54 values; .*; got .* max \|diff\| 3, "
        r"exact-match fraction 0.0000 over 2 input sets",
    ):
        _verify(case)
    assert json.loads(case.path("report.json").read_text())["passed"] is False


def test_sqnr_gate_allows_for_the_uncertainty_of_few_values():
    """40 logits estimate noise power to about +-22%: the gate widens there, not at scale."""
    from pipeline.verify.outputs import MAX_SQNR_LOSS_DB, sqnr_margin_db

    assert 2.5 < sqnr_margin_db(40) < 2.7
    assert MAX_SQNR_LOSS_DB < sqnr_margin_db(100_000) < MAX_SQNR_LOSS_DB + 0.04
    assert sqnr_margin_db(1000) < sqnr_margin_db(100)


class Residual(nn.Module):
    """conv, conv + residual add + relu, conv: the add is the third layer."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        y = torch.relu(x + self.conv2(x))
        return self.conv3(y)


def _wrong_narrow(factor: float, zero_point_offset: int):
    """The add's output RESCALE with its scale times ``factor`` (2: the shift off by one) and
    its zero point moved by ``zero_point_offset``."""
    from pipeline.tosa.emit import common as emit

    def narrow(ctx, node, total, unit):
        out_q = ctx.qparams(node)
        emit.rescale(
            ctx, node, total, [factor * unit / out_q.tensor_scale], in_zp=0,
            out_zp=out_q.zero_point + zero_point_offset, out_dtype=out_q.dtype,
            out=ctx.define(node),
        )  # fmt: skip

    return narrow


@pytest.mark.parametrize(
    "factor, zero_point_offset",
    [pytest.param(2.0, 0, id="shift_off_by_one"), pytest.param(1.0, 1, id="zero_point_plus_1")],
)
def test_wrong_lowering_names_the_first_wrong_layer(
    tmp_path, monkeypatch, factor, zero_point_offset
):
    from pipeline.tosa.emit import elementwise

    monkeypatch.setattr(elementwise, "narrow", _wrong_narrow(factor, zero_point_offset))
    case = lower_case(Residual(), [(1, 3, 8, 8)], tmp_path)
    with pytest.raises(
        VerificationError,
        match=r"^u85/verify: layer add \(add\+relu; TOSA RESCALE\+RESCALE\+ADD\+RESCALE\) at "
        r".*test_verify.py:\d+ \(y = torch.relu\(x \+ self.conv2\(x\)\)\), the first that "
        r"differs, must match torch fed the same integers within its error bound 0.5\d* ",
    ):
        _verify(case)
    report = json.loads(case.path("report.json").read_text())
    layers = {layer["node"]: layer for layer in report["layers"]}
    assert layers["add"]["beyond_bound"] > 0
    # The conv after it reads TOSA's (wrong) integers in torch too: it is still correct.
    assert layers["conv2d_2"]["beyond_bound"] == 0 and layers["conv2d_2"]["max_abs_diff_int"] <= 1


class DeepResidual(nn.Module):
    """A stem, a 2x2 stride-1 average pool (rounding ties at a quarter of its values, which
    TOSA rounds up and torch to even) and ``blocks`` residual blocks with BatchNorm holding
    non-trivial running statistics: 3 + 3 * blocks quantized layers."""

    def __init__(self, blocks: int = 12, channels: int = 8):
        super().__init__()
        torch.manual_seed(0)
        self.stem = nn.Conv2d(3, channels, 3, padding=1)
        self.convs = nn.ModuleList(
            nn.Conv2d(channels, channels, 3, padding=1) for _ in range(2 * blocks)
        )
        self.norms = nn.ModuleList(nn.BatchNorm2d(channels) for _ in range(2 * blocks))
        for norm in self.norms:
            norm.running_mean.uniform_(-0.5, 0.5)
            norm.running_var.uniform_(0.5, 2.0)
            norm.weight.data.uniform_(0.5, 1.5)
            norm.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        x = nn.functional.avg_pool2d(torch.relu(self.stem(x)), 2, stride=1)
        for i in range(0, len(self.convs), 2):
            y = torch.relu(self.norms[i](self.convs[i](x)))
            x = torch.relu(x + self.norms[i + 1](self.convs[i + 1](y)))
        return x


def test_deep_network_passes_although_its_outputs_drift(tmp_path):
    case = lower_case(DeepResidual(), [(1, 3, 16, 16)], tmp_path)
    report = _verify(case)
    assert report["passed"] and len(report["layers"]) >= 30
    assert all(layer["max_abs_diff_int"] <= 1 for layer in report["layers"])
    out = report["outputs"][0]
    # End to end, the rounding ties compound: far beyond one step, yet as good as torch.
    assert out["max_abs_diff_int"] > out["tolerance"] and out["exact_match_fraction"] < 0.8
    assert out["sqnr_db_vs_float"] > out["sqnr_db_torch_quantized_vs_float"] - 1.0


def test_variant_without_a_layer_tensor_checks_it_with_the_next(tmp_path):
    case = lower_case(Residual(), [(1, 3, 8, 8)], tmp_path)
    io = case.io()
    io["layers"][2]["tensor"] = "not_in_this_graph"  # as an NPU variant's pass might do
    case.path("io.json").write_text(json.dumps(io))
    report = _verify(case)
    assert report["passed"]
    ops = [layer["op"] for layer in report["layers"]]
    assert ops == ["input", "conv2d+relu", "conv2d+add+relu", "conv2d"]
    assert report["layers_merged"] == 1 and report["layers"][0]["node"] == "x"
    assert report["layers"][2]["tosa"] == "CONV2D+RESCALE+RESCALE+RESCALE+ADD+RESCALE"


def test_layer_map_must_name_quantize_nodes(tmp_path):
    case = lower_case(nn.MaxPool2d(2), [(1, 3, 6, 6)], tmp_path)
    io = case.io()
    io["layers"][0]["node"] = "max_pool2d"
    case.path("io.json").write_text(json.dumps(io))
    with pytest.raises(VerificationError, match=r"must name quantize nodes .*; got max_pool2d"):
        _verify(case)


def test_float_graph_report_and_summary_line(tmp_path):
    from models.add import AddModel
    from pipeline.graph.report import summary_line

    case = lower_case(AddModel(), AddModel.example_shapes, tmp_path, FP)
    report = verify_case(case)
    assert report["passed"] and "layers" not in report
    assert "AVG_POOL2D" not in report["tolerance_reason"]
    assert report["tolerance_reason"].startswith("float graph")
    assert report["outputs"][0]["sqnr_db_vs_float"] is None  # exact: infinite SQNR
    line = summary_line("tosa-fp", "add", {"verify": report})
    assert line == "tosa-fp/add: verified (pass, SQNR inf dB)"


@pytest.mark.parametrize(
    "ops, types, expected",
    [
        pytest.param(["MAX_POOL2D", "RESHAPE"], [], (0, 1.0), id="no_rounding_exact"),
        pytest.param(["CONV2D", "RESCALE"], ["int32"], (1, 0.8), id="scale32_rounding"),
        pytest.param(["CONV2D", "RESCALE"] * 3, ["int48"] * 3, (3, 0.0), id="scale16_per_rescale"),
    ],
)
def test_tolerance_policy(ops, types, expected):
    from pipeline.verify.outputs import tolerance_policy

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
    from pipeline.verify.outputs import tolerance_policy

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

    from pipeline.verify.outputs import compare_int

    entry = {"name": "y", "scale": 0.01, "zero_point": 0}
    result = compare_int(entry, _runs(np.array(offsets)), tolerance=1)
    assert result["passed"] is passed


def test_sqnr_rule_spread_errors_allowed_where_the_graph_errs_anywhere():
    """Graphs whose arithmetic errs by about 1 LSB anywhere (int48 RESCALEs with 16-bit
    multipliers, interpolated int16 TABLEs): +-1 on a quarter of the values is within the
    noise of errors spread over +-1 LSB; a systematic +1 is not."""
    import numpy as np

    from pipeline.verify.outputs import compare_int, noise_allowance

    entry = {"name": "y", "scale": 0.01, "zero_point": 0}
    spread = np.resize([1, 0, 0, 0, -1, 0, 0, 0], 200)
    assert not compare_int(entry, _runs(spread), tolerance=1)["passed"]
    interpolated = noise_allowance(0.0, 0)
    assert compare_int(entry, _runs(spread), 1, interpolated)["passed"]
    systematic = np.ones(200, dtype=np.int64)
    assert not compare_int(entry, _runs(systematic), 1, interpolated)["passed"]
    # 16-bit multipliers: a scale 2**-15 off moves every large value the same way
    assert compare_int(entry, _runs(systematic), 1, noise_allowance(0.0, 1))["passed"]
    assert not compare_int(entry, _runs(2 * systematic), 1, noise_allowance(0.0, 1))["passed"]


def test_non_finite_float_outputs_are_compared_as_integers_only():
    """A masked score's -inf (masked_fill before a softmax): no integer holds it; the SQNR is
    taken over the finite values, the integers must still match. A NaN (the float function
    undefined there) is counted and left out."""
    import numpy as np

    from pipeline.verify.outputs import compare_int

    entry = {"name": "scores", "scale": 0.01, "zero_point": 0, "qmin": -128}
    ideal = np.linspace(-1.0, 1.0, 100)
    ideal[::7] = -np.inf
    reference = np.where(np.isinf(ideal), -1.28, np.round(ideal / 0.01) * 0.01)
    got = np.round(reference / 0.01).astype(np.int64)
    ideal[5], got[5] = np.nan, 77  # acosh below 1: no right integer
    result = compare_int(entry, [(got, reference, ideal)], tolerance=0)
    assert result["passed"] and result["max_abs_diff_int"] == 0
    assert result["undefined_values"] == 1
    assert result["sqnr_db_vs_float"] == result["sqnr_db_torch_quantized_vs_float"]
    got[3] += 5
    assert not compare_int(entry, [(got, reference, ideal)], tolerance=0)["passed"]


def test_values_where_the_float_function_is_undefined_are_counted_not_compared():
    """acos of an input at its domain's edge: torch's float32 dequantize gives 1.0 (acos 0),
    the float64 exact value of the same integer is just past 1 (NaN). No integer is wrong
    there: such values are counted as undefined, the others compared."""
    import numpy as np

    from pipeline.verify.layers import Layer

    layer = Layer("quantize_acos", "acos", "acos", [4], [0], bound=0.5, check="bounded")
    exact = np.array([np.nan, 10.2, -3.0, np.nan])
    layer.add(np.array([-128, 10, -3, 5]), (exact, -128, 127), 0.0, 0.5)
    summary = layer.summary()
    assert summary["undefined_values"] == 2 and summary["beyond_bound"] == 0
    layer.add(np.array([0, 12, -3, 0]), (exact, -128, 127), 0.0, 0.5)
    assert layer.summary()["beyond_bound"] == 1


def test_outputs_torch_quantizes_from_nan_are_undefined_not_compared(tmp_path):
    """acosh of [100, 500, 1000, 1e6] in int8: the input step (3,922) puts 100..1000 on code
    0, below acosh's domain, so torch's quantized graph quantizes a NaN there - an integer
    conversion C leaves undefined. Those values are counted, not compared; the defined one
    is exact."""
    from tests.tosa.lowering_cases import Fn, run_case

    data = torch.tensor([500.0, 100.0, 1000.0, 1e6])
    _, report = run_case(Fn(lambda m, x: torch.acosh(x)), [lambda g: data.clone()], tmp_path)
    output = report["outputs"][0]
    assert report["passed"]
    assert output["undefined_values"] == 6  # three values in each of two input sets
    assert output["elements"] == 2 and output["max_abs_diff_int"] == 0
