"""The quantizer on integer/bool tensors and attention masks: ids, masks and indices stay
unquantized (never a torchao assertion), fills and additive masks saturate the scores'
qparams instead of setting them."""

import pytest
import torch
from torch import nn

pytestmark = pytest.mark.needs_torch


class IntegerPaths(nn.Module):
    """Every kind of node an integer or bool tensor passes through in a real model."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)

    def forward(self, ids, mask):
        tokens = self.embed(ids.view(2, 6))  # view of ints, lookup of a float table
        pad = torch.cat([mask, mask], 1)[:, :6].unsqueeze(-1)  # cat/slice/unsqueeze of bools
        positions = (ids.view(2, 6) > 3).long().expand(2, 6)
        return tokens * pad.float() + positions.unsqueeze(-1).float()


def quantize(module, *inputs):
    from pipeline.chain.quantize import quantize_program

    program = torch.export.export(module.eval(), inputs)
    return quantize_program(program, [inputs], "int8")


def test_integer_and_bool_tensors_stay_unquantized():
    ids, mask = torch.randint(0, 20, (12,)), torch.rand(2, 3) > 0.5
    quantized = quantize(IntegerPaths(), ids, mask)
    quantized_inputs = {
        n.args[0].name
        for n in quantized.graph.nodes
        if str(n.target).startswith("quantized_decomposed.quantize")
    }
    assert not quantized_inputs & {"ids", "mask"}
    assert any(str(n.target) == "aten.embedding.default" for n in quantized.graph.nodes)


def test_finite_observer_counts_infinities_as_float_limits():
    from pipeline.quant.mask_specs import FiniteMinMaxObserver

    observer = FiniteMinMaxObserver(dtype=torch.int8, quant_min=-128, quant_max=127)
    observer(torch.tensor([0.0, float("-inf"), 2.0]))
    scale, zero_point = observer.calculate_qparams()
    assert torch.isfinite(scale) and float(observer.min_val) == torch.finfo(torch.float32).min


class Attention(nn.Module):
    def forward(self, scores, mask):
        masked = scores.masked_fill(mask == 0, -1e9)
        return masked.softmax(-1), scores + (1.0 - mask.float()) * -10000.0


def _scale(quantized, name: str) -> float:
    node = next(n for n in quantized.graph.nodes if n.name == name)
    quantize = next(u for u in node.users if "quantize_per_tensor" in str(u.target))
    return quantize.args[1]


def test_masked_outputs_take_the_scores_range_plus_the_margin():
    """Neither -1e9 nor -10000 sets a scale: the outputs cover the scores ([-4, 4]) and the
    int8 margin below them, and the softmax after the fill is calibrated on that too."""
    from pipeline.quant.mask_specs import MARGIN

    scores = torch.linspace(-4, 4, 2 * 6 * 6).reshape(2, 6, 6)
    mask = (torch.arange(6) < 4).long().expand(2, 6, 6)
    quantized = quantize(Attention(), scores, mask)
    expected = (8 + MARGIN[torch.int8]) / 255
    assert _scale(quantized, "where") == pytest.approx(expected, rel=1e-3)
    assert _scale(quantized, "add") == pytest.approx(expected, rel=1e-3)
    assert _scale(quantized, "exp") == pytest.approx(1 / 255, rel=1e-3)


def test_mask_likeness():
    from pipeline.quant.mask_specs import is_fill, is_mask_like

    from pipeline.chain.export import normalise

    inputs = (torch.rand(2, 6, 6), torch.ones(2, 6, 6).long())
    gm = normalise(torch.export.export(Attention().eval(), inputs)).module(check_guards=False)
    nodes = {n.name: n for n in gm.graph.nodes}
    assert is_mask_like(nodes["mul_2"]) and is_mask_like(nodes["eq"])
    assert not is_mask_like(nodes["scores"]) and not is_mask_like(nodes["where"])
    fill = next(a for a in nodes["where"].args[1:] if a is not nodes["scores"])
    assert is_fill(fill) and not is_fill(nodes["scores"])


def test_a_mask_behind_a_shared_observer_links_to_it():
    """``ids.float().unsqueeze(-1) + x``: the added mask's observer is shared by the cast
    and the unsqueeze (one module, two names), which the link must still find."""

    class Offsets(nn.Module):
        def forward(self, ids, x):
            return (ids + 3).float().unsqueeze(-1) + x

    quantized = quantize(Offsets(), torch.randint(0, 10, (2, 5)), torch.rand(2, 5, 4))
    assert any(str(n.target) == "aten.add.Tensor" for n in quantized.graph.nodes)
