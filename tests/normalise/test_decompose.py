"""softmax / layer_norm / unbind written out before quantization, then lowered and verified."""

import pytest
import torch
from torch import nn

from pipeline.normalise.decompose import DECOMPOSITIONS, layer_norm, softmax
from tests.tosa.lowering_cases import A16W8, run_case, run_vela

pytestmark = [pytest.mark.needs_torch]


def test_decompositions_match_torch_in_float():
    x = torch.randn(2, 5, 16)
    weight, bias = torch.rand(16) + 0.5, torch.rand(16) - 0.5
    torch.testing.assert_close(softmax(x, -1), torch.softmax(x, -1))
    torch.testing.assert_close(
        layer_norm(x, [16], weight, bias, 1e-5),
        nn.functional.layer_norm(x, [16], weight, bias, 1e-5),
        atol=1e-5,
        rtol=1e-5,
    )
    assert torch.ops.aten.softmax.int in DECOMPOSITIONS


class Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1)


def layer_norm_module(size=32):
    torch.manual_seed(0)
    module = nn.LayerNorm(size)
    with torch.no_grad():
        module.weight.uniform_(0.5, 1.5)
        module.bias.uniform_(-0.2, 0.2)
    return module


@pytest.mark.needs_tosa_ref
@pytest.mark.parametrize(
    "module, shape, tables",
    [
        pytest.param(Softmax(), ((2, 5, 16), 4.0), 2, id="softmax_tokens"),
        pytest.param(Softmax(), ((1, 2, 8, 8), 4.0), 2, id="softmax_attention_scores"),
        # variance + eps is an int8 TABLE too (ops/op_add.py), then rsqrt
        pytest.param(layer_norm_module(), ((1, 8, 32), 2.0), 2, id="layer_norm"),
    ],
)
def test_decomposed_ops_lower_to_npu_operators_and_verify(module, shape, tables, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert report["outputs"][0]["sqnr_db_vs_float"] > 20
    assert case.ops().count("TABLE") == tables  # exp + reciprocal, or + eps and rsqrt


def _rows_of_varied_spread(g):
    """Rows from nearly constant to wide: a layer norm's variance spans two decades."""
    return torch.randn((2, 16, 64), generator=g) * torch.linspace(0.05, 3, 16).reshape(1, 16, 1)


class HeadsSoftmax(nn.Module):
    """The reference's attention softmax: 4 heads of 16 logits each."""

    def forward(self, x):
        n, t, _ = x.shape
        return torch.softmax(x.reshape(n, t, 4, 1, 16), dim=-1).reshape(n, t, 64)


@pytest.mark.needs_tosa_ref
@pytest.mark.parametrize(
    "module, spec",
    [
        # rsqrt of the variance near its smallest: a split TABLE (pipeline/tosa/functions/table_split.py)
        pytest.param(layer_norm_module(64), _rows_of_varied_spread, id="layer_norm_varied_rows"),
        # exp over logits 30 wide: a zoomed TABLE (pipeline/tosa/functions/table_zoom.py)
        pytest.param(HeadsSoftmax(), lambda g: torch.rand((8, 1, 64), generator=g) * 30 - 15,
                     id="softmax_logits_15"),
    ],
)  # fmt: skip
def test_a16w8_decompositions_keep_torchs_precision_over_wide_ranges(module, spec, tmp_path):
    case, report = run_case(module, [spec], tmp_path, A16W8)
    assert report["passed"], report["outputs"]


def test_split_and_log_softmax_decompositions_match_torch_in_float():
    from pipeline.normalise.decompose import chunk, log_softmax, split, split_with_sizes

    x = torch.randn(1, 10, 4)
    torch.testing.assert_close(log_softmax(x, -1), torch.log_softmax(x, -1))
    for ours, theirs in (
        (chunk(x, 3, 1), torch.chunk(x, 3, 1)),
        (split(x, 4, 1), torch.split(x, 4, 1)),
        (split_with_sizes(x, [3, 7], 1), torch.split(x, [3, 7], 1)),
    ):
        assert [t.shape for t in ours] == [t.shape for t in theirs]
        assert all(a.equal(b) for a, b in zip(ours, theirs))


class ChunkSplitLogSoftmax(nn.Module):
    def forward(self, x):
        a, b = torch.chunk(x, 2, dim=1)
        c, d = torch.split(a + b, [3, 5], dim=-1)
        return torch.log_softmax(c, dim=-1), d


@pytest.mark.needs_tosa_ref
@pytest.mark.needs_vela
def test_chunk_split_and_log_softmax_lower_verify_and_run_on_the_npu(tmp_path):
    case, report = run_case(ChunkSplitLogSoftmax(), [((1, 8, 4, 8), 2.0)], tmp_path)
    assert report["passed"]
    ops = case.ops()
    assert "SLICE" in ops and "TABLE" in ops
    for accelerator in ("ethos-u55-128", "ethos-u85-256"):
        figures = run_vela(case.tosa, accelerator, tmp_path / accelerator)
        assert figures["npu_op_share"] == 1.0, accelerator
