"""softmax / layer_norm / unbind written out before quantization, then lowered and verified."""

import pytest
import torch
from torch import nn

from pipeline.quant.decompose import DECOMPOSITIONS, layer_norm, softmax
from tests.tosa.lowering_cases import run_case

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


def layer_norm_module():
    torch.manual_seed(0)
    module = nn.LayerNorm(32)
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
        pytest.param(layer_norm_module(), ((1, 8, 32), 2.0), 1, id="layer_norm"),
    ],
)
def test_decomposed_ops_lower_to_npu_operators_and_verify(module, shape, tables, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert report["outputs"][0]["sqnr_db_vs_float"] > 20
    assert case.ops().count("TABLE") == tables  # exp + reciprocal, or rsqrt
