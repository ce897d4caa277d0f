"""scaled_dot_product_attention written out (pipeline/normalise/attention.py): the write-out
matches torch in float for every kind of mask, and quantized, the masked sums get the scores'
qparams rather than an observed range that MASKED would blow up."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from pipeline.normalise import attention
from pipeline.normalise.attention import MASKED, masked_softmax, scaled_dot_product_attention
from pipeline.quant.schemes import get_scheme

pytestmark = [pytest.mark.needs_torch]


def _qkv(seed=0, shape=(1, 2, 8, 16)):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator) for _ in range(3)]


def _causal_float(n: int) -> torch.Tensor:
    return torch.full((n, n), float("-inf")).triu(1)


MASKS = [
    pytest.param({}, id="no_mask"),
    pytest.param({"is_causal": True}, id="is_causal"),
    pytest.param({"attn_mask": (torch.arange(8) < 5).reshape(1, 1, 1, 8)}, id="bool_key_padding"),
    pytest.param({"attn_mask": _causal_float(8)}, id="float_minus_inf_causal"),
    pytest.param({"attn_mask": torch.randn(1, 2, 8, 8)}, id="float_bias_alibi_like"),
    pytest.param({"attn_mask": torch.rand(8, 8) > 0.3, "scale": 0.3}, id="bool_full_custom_scale"),
]


@pytest.mark.parametrize("kwargs", MASKS)
def test_write_out_matches_torch_in_float(kwargs):
    q, k, v = _qkv()
    mask = kwargs.get("attn_mask")
    if mask is not None and mask.dtype == torch.bool:
        mask[..., 0] = True  # every row attends to something (torch gives NaN otherwise)
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, **kwargs),
        F.scaled_dot_product_attention(q, k, v, **kwargs),
        atol=1e-5,
        rtol=1e-5,
    )


def test_grouped_query_attention_repeats_keys_and_values():
    q = torch.randn(1, 4, 6, 8)
    k, v = torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8)
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, enable_gqa=True),
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
    )


def test_masked_softmax_gives_masked_entries_exactly_zero():
    scores = torch.randn(2, 8, 8)
    bias = torch.where(torch.ones(8, 8, dtype=torch.bool).tril(), 0.0, MASKED)
    weights = masked_softmax(scores, bias)
    assert (weights.triu(1) == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 8))


class Attention(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, **self.kwargs)


def _quantized(module, scheme="int8"):
    from pipeline.chain.quantize import quantize_program
    from pipeline.chain.export import export as export_program

    samples = [tuple(_qkv(seed)) for seed in range(3)]
    return quantize_program(export_program(module, samples[0]), samples, scheme)


def _quantize_args(program) -> dict[str, tuple[float, int]]:
    """FX node name -> (scale, zero point) of the quantize node after it."""
    found = {}
    for node in program.graph.nodes:
        if str(node.target).startswith("quantized_decomposed.quantize_per_tensor"):
            source = node.args[0]
            found[source.name] = (float(node.args[1]), int(node.args[2]))
    return found


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_masked_scores_keep_the_scores_qparams_and_the_exponent_reaches_exp_floor(scheme):
    program = _quantized(Attention(is_causal=True), scheme)
    qparams = _quantize_args(program)
    roles = {n.name: attention.role(n) for n in program.graph.nodes if attention.role(n)}
    by_role = {role: name for name, role in roles.items()}
    scores = by_role["masked_scores"]
    scores_input = next(n for n in program.graph.nodes if n.name == scores).args[0]
    source = scores_input.args[0].args[0]  # dequantize <- quantize <- scores
    assert qparams[scores] == qparams[source.name]  # masked entries saturate, no new range
    scale, zero_point = qparams[by_role["masked_shift"]]
    spec = get_scheme(scheme).activation
    lowest = (spec.quant_min - zero_point) * scale
    assert lowest <= -attention.exp_floor(spec) * (1 - 1e-6)  # exp() of a masked entry: 0
