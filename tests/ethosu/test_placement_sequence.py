"""Attention and recurrent layers compiled by Vela for Ethos-U55-128 and -U85-256: every
operator of the NPU's variant of the graph placed on the NPU, or the pre-Vela constraint
check naming the rule that keeps it off (a bool mask input needs SELECT, int16 attention needs
an int16 MATMUL: Ethos-U85 only)."""

import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from models.cases.networks import ACCELERATORS
from pipeline.chain.vela import vela_args
from pipeline.config.npu import NpuConfig
from pipeline.errors import UserError
from pipeline.ethosu.placement import check_npu_constraints
from pipeline.ethosu.vela import run_vela
from tests.tosa.lowering_cases import A16W8, INT8, lower_case
from tests.tosa.ops.test_op_rnn import Recurrent
from tests.tosa.ops.test_op_sdpa import Attention, CausalBuffer, Mha, padding_mask, qkv

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_vela]


class EncoderAttention(nn.Module):
    """A ViT/BERT attention block as written with SDPA: qkv projection, heads, output
    projection (1 x 32 tokens x 64, 4 heads)."""

    def __init__(self, dim: int = 64, heads: int = 4, causal: bool = False):
        super().__init__()
        torch.manual_seed(1)  # not 0: the inputs are drawn from seed 0
        self.heads, self.causal = heads, causal
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x):
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.heads, dim // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(out.transpose(1, 2).reshape(batch, tokens, dim))


# name -> (module, input shapes, scheme, {accelerator family: rule Vela would break} )
CASES = {
    "sdpa_vit_64_tokens": (Attention(), qkv(1, 4, 64, 16), INT8, {}),
    "sdpa_is_causal": (Attention(is_causal=True), qkv(1, 4, 16, 32), INT8, {}),
    "sdpa_float_causal_buffer": (CausalBuffer(24), qkv(1, 2, 24, 16), INT8, {}),
    "sdpa_float_bias": (Attention(), [*qkv(1, 2, 16, 16), ((1, 2, 16, 16), 1.0)], INT8, {}),
    "sdpa_bool_padding_mask": (
        Attention(), [*qkv(1, 2, 32, 32), padding_mask(32)], INT8, {"u55": "SELECT"}
    ),
    "encoder_attention_block": (EncoderAttention(), [((1, 32, 64), 2.0)], INT8, {}),
    "decoder_attention_block": (EncoderAttention(causal=True), [((1, 32, 64), 2.0)], INT8, {}),
    "mha_causal_with_weights": (Mha(True, True, 16), [((1, 16, 64), 2.0)], INT8, {}),
    "mha_seq_first": (Mha(False, False), [((16, 1, 64), 2.0)], INT8, {}),
    "sdpa_is_causal_a16w8": (
        Attention(is_causal=True), qkv(1, 4, 16, 32), A16W8, {"u55": "MATMUL"}
    ),
    "lstm_2_layers_given_state": (
        Recurrent("LSTM", 16, 24, 2, batch_first=False, state=True, returns="both"),
        [(8, 1, 16), ((2, 1, 24), 0.5), ((2, 1, 24), 0.5)], INT8, {},
    ),
    "gru_2_layers": (Recurrent("GRU", 16, 32, 2, returns="both"), [(1, 10, 16)], INT8, {}),
    "gru_2_layers_a16w8": (
        Recurrent("GRU", 16, 32, 2, returns="both"), [(1, 10, 16)], A16W8, {}
    ),
}
# The 49-frame keyword spotters are compiled by tests/tosa/ops/test_op_rnn.py, which lowers
# them once for its checks against torch and for Vela (49 unrolled steps: the costliest to
# lower).


@pytest.fixture(
    scope="module",
    params=list(CASES),
)
def lowered(request, tmp_path_factory):
    module, shapes, scheme, rules = CASES[request.param]
    folder = tmp_path_factory.mktemp(request.param)
    return lower_case(module, shapes, folder, scheme, spec="TOSA-1.0+INT+int16"), rules


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_every_operator_runs_on_the_npu_or_a_rule_says_why(lowered, accelerator, tmp_path):
    case, rules = lowered
    npu = NpuConfig.model_validate({"config": accelerator})
    tosa = case.variant(npu.variant)
    broken = rules.get(accelerator.split("-")[1])
    if broken:
        with pytest.raises(UserError, match=f"TOSA {broken} on {accelerator} must"):
            check_npu_constraints(tosa, accelerator, where="test/vela")
        return
    check_npu_constraints(tosa, accelerator, where="test/vela")
    outputs = run_vela(tosa, tmp_path, vela_args(accelerator), where="test/vela")
    figures = json.loads(outputs["figures"].read_text())
    assert figures["npu_op_share"] == 1.0
    assert figures["cycles_npu"] > 0
