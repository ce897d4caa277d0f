"""Normalisation of indexing: bool-mask writes become where, constant bool masks become int
positions (the exported graph's data-dependent size static again), and the write-backs of
in-place indexing go. The rewritten program computes what the original did."""

import pytest
import torch

from pipeline.normalise import is_normal
from pipeline.tosa.registry import lowered_targets
from pipeline.chain.export import export as export_program
from tests.tosa.lowering_cases import Fn

pytestmark = pytest.mark.needs_torch


def targets(program) -> list[str]:
    return [str(n.target) for n in program.graph.nodes if n.op == "call_function"]


def masked_write(m, x, mask):
    x = x.clone()
    x[mask] = -1.0
    return x


def strided_update(m, x, y):
    x = x.clone()
    x[:, 1::2] += y
    return x


class MaskBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mask", torch.tensor([True, False, True, True]))

    def forward(self, x):
        return (x[:, self.mask] * 2).sum(1)


CASES = [
    pytest.param(Fn(masked_write), (torch.rand(2, 4), torch.rand(2, 4) > 0.5),
                 ["aten.where.self"], id="mask_write_is_where"),
    pytest.param(MaskBuffer(), (torch.rand(2, 4, 5),),
                 ["aten.index.Tensor", "aten.mul.Tensor", "aten.sum.dim_IntList"],
                 id="constant_mask_is_positions"),
    pytest.param(Fn(strided_update), (torch.rand(2, 6), torch.rand(2, 3)),
                 ["aten.slice.Tensor", "aten.add.Tensor", "aten.slice_scatter.default"],
                 id="write_back_removed"),
]  # fmt: skip


@pytest.mark.parametrize("module, inputs, expected", CASES)
def test_indexing_is_normalised_and_keeps_its_values(module, inputs, expected):
    program = export_program(module.eval(), inputs)
    assert targets(program) == expected
    assert is_normal(program, lowered_targets())
    torch.testing.assert_close(program.module()(*inputs), module(*inputs))


def test_constant_mask_output_shape_is_static():
    program = export_program(MaskBuffer().eval(), (torch.rand(2, 4, 5),))
    index = next(n for n in program.graph.nodes if str(n.target) == "aten.index.Tensor")
    assert tuple(index.meta["val"].shape) == (2, 3, 5)
    assert not program.range_constraints
