"""nn.LSTM / nn.GRU unrolled (pipeline/normalise/recurrent.py): the unrolled form matches torch in
float for every configuration torch offers, and quantized, every step of one value shares
one set of qparams."""

import pytest
import torch
from torch import nn

from pipeline.normalise import recurrent

pytestmark = [pytest.mark.needs_torch]

CONFIGS = [
    pytest.param("LSTM", {"num_layers": 1, "batch_first": True}, id="lstm_batch_first"),
    pytest.param("LSTM", {"num_layers": 2, "batch_first": False}, id="lstm_2_layers_seq_first"),
    pytest.param("LSTM", {"num_layers": 2, "bidirectional": True}, id="lstm_bidirectional"),
    pytest.param("LSTM", {"num_layers": 2, "proj_size": 5}, id="lstm_projection"),
    pytest.param("LSTM", {"num_layers": 1, "bias": False}, id="lstm_no_bias"),
    pytest.param("GRU", {"num_layers": 1, "batch_first": True}, id="gru_batch_first"),
    pytest.param("GRU", {"num_layers": 2, "batch_first": False}, id="gru_2_layers_seq_first"),
    pytest.param("GRU", {"num_layers": 2, "bidirectional": True, "bias": False},
                 id="gru_bidirectional_no_bias"),
]


def _run(module, x, state, unrolled: bool):
    """The module's outputs, through torch's kernel or our aten decomposition."""
    if not unrolled:
        return module(x, state)
    weights = module._flat_weights
    layers = module.num_layers
    args = (module.bias, layers, 0.0, False, module.bidirectional, module.batch_first)
    if isinstance(module, nn.LSTM):
        out, h, c = recurrent.lstm(x, list(state), weights, *args)
        return out, (h, c)
    return recurrent.gru(x, state, weights, *args)


@pytest.mark.parametrize("cell, options", CONFIGS)
def test_unrolled_matches_torch_in_float(cell, options):
    torch.manual_seed(0)
    module = getattr(nn, cell)(6, 8, **options).eval()
    directions = 2 if module.bidirectional else 1
    batch, steps = 2, 5
    x = torch.randn((batch, steps, 6) if module.batch_first else (steps, batch, 6))
    h_size = options.get("proj_size") or 8
    h0 = torch.randn(module.num_layers * directions, batch, h_size)
    state = (h0, torch.randn(module.num_layers * directions, batch, 8)) if cell == "LSTM" else h0
    with torch.no_grad():
        expected, got = _run(module, x, state, False), _run(module, x, state, True)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


class Gru(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.rnn = nn.GRU(4, 8, 2, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


def test_every_step_of_a_value_shares_one_quantization():
    from pipeline.chain.quantize import quantize_program
    from pipeline.chain.export import export as export_program

    samples = [(torch.rand(1, 6, 4) * 2 - 1,) for _ in range(3)]
    program = quantize_program(export_program(Gru(), samples[0]), samples)
    by_group: dict[str, set] = {}
    for node in program.graph.nodes:
        group = recurrent.step_group(node)
        users = [u for u in node.users if "quantize_per_tensor" in str(u.target)]
        if group is not None and users:
            by_group.setdefault(group, set()).add(tuple(users[0].args[1:3]))
    assert {g.split(":")[1] for g in by_group} >= {"gru0.state", "gru1.state", "gru0.n", "gru1.z"}
    assert all(len(qparams) == 1 for qparams in by_group.values()), by_group
