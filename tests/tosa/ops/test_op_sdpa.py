"""scaled_dot_product_attention and nn.MultiheadAttention (written out by
pipeline/normalise/attention.py): reference model against torch, int8 / a16w8 / FP, on the
shapes of small ViT / BERT / decoder blocks, every kind of mask."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from pipeline.verify.reference_model import run_reference_model
from tests.tosa.lowering_cases import A16W8, FP, INT8, random_inputs, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Attention(nn.Module):
    """``F.scaled_dot_product_attention(q, k, v[, mask])`` as user code calls it."""

    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, q, k, v, mask=None):
        extra = {} if mask is None else {"attn_mask": mask}
        return F.scaled_dot_product_attention(q, k, v, **self.kwargs, **extra)


class CausalBuffer(nn.Module):
    """A float causal mask held as a buffer, -inf above the diagonal (older GPT-style code)."""

    def __init__(self, tokens: int):
        super().__init__()
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(tokens))

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)


def padding_mask(tokens: int):
    """A BERT-style key padding mask input: True for the first n tokens (n >= tokens / 2)."""

    def draw(generator):
        kept = torch.randint(tokens // 2, tokens + 1, (1,), generator=generator)
        return (torch.arange(tokens) < kept).reshape(1, 1, 1, tokens)

    return draw


def qkv(batch, heads, tokens, dim, amplitude=2.0):
    return [((batch, heads, tokens, dim), amplitude)] * 3


SDPA = [
    pytest.param(Attention(), qkv(1, 4, 64, 16), id="vit_64_tokens_4_heads_dim16"),
    pytest.param(Attention(), qkv(1, 3, 17, 32), id="vit_cls_17_tokens_3_heads_dim32"),
    pytest.param(Attention(is_causal=True), qkv(1, 4, 16, 32), id="decoder_is_causal"),
    pytest.param(CausalBuffer(24), qkv(1, 2, 24, 16), id="float_causal_buffer_minus_inf"),
    pytest.param(
        Attention(), [*qkv(1, 2, 32, 32), padding_mask(32)], id="bert_bool_key_padding_mask"
    ),
    pytest.param(
        Attention(), [*qkv(1, 2, 16, 16), ((1, 2, 16, 16), 1.0)], id="float_additive_bias"
    ),
]


# Against the float model. Calibration (4 samples) bounds the masked cases: a padding mask
# whose test draw keeps fewer keys than any calibration draw clips the row sums' reciprocal.
SQNR_DB = {INT8: 25, A16W8: 25, FP: 100}


@pytest.mark.parametrize("module, shapes", SDPA)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_sdpa_matches_torch(module, shapes, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    ops = case.ops()
    assert ops.count("MATMUL") == 2
    assert ("SELECT" in ops) == callable(shapes[-1])  # only for the bool mask input
    assert report["outputs"][0]["sqnr_db_vs_float"] > SQNR_DB[dtype]


class Mha(nn.Module):
    """``nn.MultiheadAttention`` self-attention as users write it (64 wide, 4 heads)."""

    def __init__(self, batch_first: bool, need_weights: bool, causal_tokens: int = 0):
        super().__init__()
        torch.manual_seed(1)  # not 0: the inputs are drawn from seed 0
        self.attention = nn.MultiheadAttention(64, 4, batch_first=batch_first)
        self.need_weights = need_weights
        causal = nn.Transformer.generate_square_subsequent_mask
        self.register_buffer("mask", causal(causal_tokens) if causal_tokens else None)

    def forward(self, x):
        out, weights = self.attention(x, x, x, need_weights=self.need_weights, attn_mask=self.mask)
        return (out, weights) if self.need_weights else out


MHA = [
    pytest.param(Mha(True, False), [((1, 16, 64), 2.0)], id="batch_first_no_weights"),
    pytest.param(Mha(False, True), [((16, 1, 64), 2.0)], id="seq_first_with_averaged_weights"),
    pytest.param(Mha(True, True, 16), [((1, 16, 64), 2.0)], id="batch_first_causal_with_weights"),
]


@pytest.mark.parametrize("module, shapes", MHA)
@pytest.mark.parametrize("dtype", [INT8, pytest.param(A16W8, marks=pytest.mark.slow), FP])
def test_multihead_attention_matches_torch(module, shapes, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    assert case.ops().count("MATMUL") == 2
    assert report["outputs"][0]["sqnr_db_vs_float"] > SQNR_DB[dtype]


def test_masked_attention_weights_are_exactly_zero(tmp_path):
    """The TOSA graph's causal attention weights above the diagonal are the quantized 0.0, not
    a small probability: a masked entry's exponent saturates below exp_floor."""
    case, report = run_case(Mha(True, True, 16), [((1, 16, 64), 2.0)], tmp_path, INT8)
    assert report["passed"]
    io = case.io()
    (x,) = random_inputs([((1, 16, 64), 2.0)], 0)
    entry = io["inputs"][0]
    codes = torch.ops.quantized_decomposed.quantize_per_tensor(
        x, entry["scale"], entry["zero_point"], entry["qmin"], entry["qmax"], torch.int8
    )
    feeds = {entry.get("tosa_name", entry["name"]): np.transpose(codes.numpy(), entry["dim_order"])}
    weights_io = io["outputs"][1]
    outputs = run_reference_model(case.tosa, feeds, [e["name"] for e in io["outputs"]])
    got = outputs[weights_io["name"]]
    weights = np.transpose(got, np.argsort(weights_io["dim_order"]))[0]
    masked, attended = np.triu_indices(16, 1), np.tril_indices(16)
    assert (weights[masked] == weights_io["zero_point"]).all()
    assert (weights[attended] != weights_io["zero_point"]).all()
