"""where / masked_fill -> SELECT, and attention masks (fills and additive masks) under
quantization: the TOSA reference model against torch's quantized graph, and the masked
softmax against the float one."""

import numpy as np
import pytest
import torch
from torch import nn

from pipeline.verify.check import _from_tosa, _to_tosa
from pipeline.verify.reference_model import run_reference_model
from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, booleans, integers, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

B, H, T = 2, 2, 8
SCORES = ((B, H, T, T), 4.0)  # attention logits in [-4, 4)


class MaskedFill(nn.Module):
    """``scores.masked_fill(mask == 0, -1e9)`` with an int64 padding mask, then softmax."""

    def forward(self, scores, mask):
        return scores.masked_fill(mask[:, None, None, :] == 0, -1e9).softmax(-1)


class MaskedFillTensor(nn.Module):
    """DistilBERT's form: ``masked_fill`` with a 0-d tensor value, a bool mask expanded."""

    def forward(self, scores, mask):
        masked = (mask == 0).view(B, 1, 1, T).expand_as(scores)
        value = torch.tensor(torch.finfo(scores.dtype).min)
        return torch.softmax(scores.masked_fill(masked, value), -1)


class WhereMin(nn.Module):
    """``torch.where(mask, x, torch.finfo(x.dtype).min)`` with a bool mask input."""

    def forward(self, scores, mask):
        masked = torch.where(mask[:, None, None, :], scores, torch.finfo(scores.dtype).min)
        return torch.softmax(masked, -1)


class AdditiveMask(nn.Module):
    """BERT's extended attention mask: ``(1.0 - mask) * -10000.0`` added to the scores."""

    def forward(self, scores, mask):
        extended = mask[:, None, None, :].to(scores.dtype)
        return torch.softmax(scores + (1.0 - extended) * -10000.0, -1)


class EagerMask(nn.Module):
    """HF's eager attention: ``where(mask, 0.0, finfo.min)`` built from the padding mask,
    added to the scores."""

    def forward(self, scores, mask):
        bias = torch.where(mask.bool()[:, None, None, :], 0.0, torch.finfo(scores.dtype).min)
        return torch.softmax(scores + bias, -1)


class CausalMask(nn.Module):
    """A constant causal mask of 0 and -inf (folded by normalisation) added to the scores."""

    def __init__(self):
        super().__init__()
        self.register_buffer("causal", torch.full((T, T), float("-inf")).triu(1))

    def forward(self, scores):
        return torch.softmax(scores + self.causal, -1)


MASKED_SOFTMAX = [
    pytest.param(MaskedFill(), booleans((B, T), dtype=torch.int64), id="masked_fill_minus_1e9"),
    pytest.param(MaskedFillTensor(), booleans((B, T), dtype=torch.int64), id="masked_fill_tensor"),
    pytest.param(WhereMin(), booleans((B, T)), id="where_finfo_min"),
    pytest.param(AdditiveMask(), booleans((B, T), dtype=torch.int64), id="additive_minus_10000"),
    pytest.param(EagerMask(), booleans((B, T), dtype=torch.int64), id="hf_eager_where_add"),
]


def tosa_outputs(case, sample) -> list[np.ndarray]:
    """The TOSA reference model's outputs for one input tuple, dequantized."""
    io = case.io()
    feeds = {e.get("tosa_name", e["name"]): _to_tosa(x, e) for x, e in zip(sample, io["inputs"])}
    got = run_reference_model(case.tosa, feeds, [e["name"] for e in io["outputs"]])
    return [
        (_from_tosa(got[e["name"]], e).astype(np.float64) - e["zero_point"]) * e["scale"]
        for e in io["outputs"]
    ]


@pytest.mark.parametrize("module, mask", MASKED_SOFTMAX)
@pytest.mark.parametrize("dtype", [INT8, FP])
def test_masked_softmax(module, mask, dtype, tmp_path):
    """The fill saturates a margin below the scores: masked positions get exactly 0 from the
    int8 softmax, as from the float one, and the result is as close to float as an unmasked
    int8 softmax (~40 dB on these scores)."""
    case, report = run_case(module, [SCORES, mask], tmp_path, dtype)
    assert report["passed"]
    if dtype == FP:
        return
    assert report["outputs"][0]["sqnr_db_vs_float"] > 30.0
    sample = torch.load(case.path("test_inputs.pt"))[0]
    probabilities = tosa_outputs(case, sample)[0]
    masked = ~sample[1].bool()[:, None, None, :].expand(B, H, T, T).numpy()
    assert np.all(probabilities[masked] == 0.0)


@pytest.mark.parametrize("dtype", [INT8, FP])
def test_constant_causal_mask_of_minus_inf(dtype, tmp_path):
    """-inf in a folded constant mask: observed as float32's limit, it saturates too."""
    case, report = run_case(CausalMask(), [SCORES], tmp_path, dtype)
    assert report["passed"]
    if dtype != FP:
        probabilities = tosa_outputs(case, torch.load(case.path("test_inputs.pt"))[0])[0]
        assert np.all(probabilities[..., np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] == 0)


class RowMax(nn.Module):
    """The row maximum of masked scores: masked positions never win (a whole masked row
    gives the saturated value). int16 masks without the softmax, whose int16 TABLEs carry
    their own error."""

    def __init__(self, masking):
        super().__init__()
        self.masking = masking

    def forward(self, scores, mask):
        return self.masking(scores, mask).amax(-1)


MASKING = {
    "masked_fill_minus_1e9": lambda s, m: s.masked_fill(m[:, None, None, :] == 0, -1e9),
    "where_finfo_min": lambda s, m: torch.where(m[:, None, None, :] != 0, s, -3.4e38),
    "where_scalar_self": lambda s, m: torch.where(m[:, None, None, :] == 0, float("-inf"), s),
    "additive_minus_10000": lambda s, m: s + (1.0 - m[:, None, None, :].float()) * -10000.0,
    "additive_finfo_min": lambda s, m: s + (1.0 - m[:, None, None, :].float()) * -3.4e38,
}


@pytest.mark.parametrize("masking", MASKING.values(), ids=MASKING)
@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_masked_scores_match_torch(masking, dtype, tmp_path):
    mask = booleans((B, T), dtype=torch.int64)
    case, report = run_case(RowMax(masking), [SCORES, mask], tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] <= 1


class WhereTensors(nn.Module):
    def forward(self, x, y, mask):
        return torch.where(mask, x, y)


class WhereIds(nn.Module):
    """Integer values: pad ids replaced by 1 (no quantization)."""

    def forward(self, ids):
        return torch.where(ids == 0, 1, ids), torch.where(ids > 4, ids, 0)


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_where_of_two_tensors_is_exact(dtype, tmp_path):
    """Both values share one quantization: SELECT moves integers, bit-exact."""
    shapes = [(2, 4, 6), ((2, 4, 6), 3.0), booleans((2, 1, 6))]
    case, report = run_case(WhereTensors(), shapes, tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert "SELECT" in case.ops()


def test_where_of_integers(tmp_path):
    case, report = run_case(WhereIds(), [integers((2, 6), 8)], tmp_path, INT8)
    assert report["passed"]
    assert [o["dtype"] for o in case.io()["outputs"]] == ["int32", "int32"]
    assert case.ops().count("SELECT") == 2


@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
@pytest.mark.parametrize(
    "fn, shape",
    [pytest.param(lambda m, x: torch.tril(x), (2, 6, 6), id="tril"),
     pytest.param(lambda m, x: torch.triu(x, 1), (1, 3, 5, 5), id="triu_diagonal1_nchw"),
     pytest.param(lambda m, x: x * torch.tril(torch.ones(8, 8)), (2, 8, 8), id="tril_of_constant")],
)  # fmt: skip
def test_tril_triu_are_a_constant_mask(fn, shape, dtype, tmp_path):
    """tril/triu decompose to a where with a constant mask (tril of a constant folds)."""
    case, report = run_case(Fn(fn), [shape], tmp_path, dtype)
    assert report["passed"]
    if "SELECT" in case.ops():
        output = report["outputs"][0]
        assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
