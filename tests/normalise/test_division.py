"""Division by a tensor and add/sub.Scalar written out before quantization: what the
normalised program holds (the lowering and verification are tested per operator)."""

import pytest
import torch

from pipeline.chain.export import normalise
from models.cases import Lambda

pytestmark = pytest.mark.needs_torch


def _targets(fn, *inputs) -> list[str]:
    program = normalise(torch.export.export(Lambda(fn).eval(), inputs))
    return [str(n.target) for n in program.graph.nodes if n.op == "call_function"]


def test_division_by_a_tensor_is_a_reciprocal_and_a_mul():
    x, y = torch.rand(2, 3), torch.rand(2, 3) + 1
    assert _targets(lambda a, b: a / b, x, y) == ["aten.reciprocal.default", "aten.mul.Tensor"]
    assert _targets(lambda a, b: torch.div(a, b, rounding_mode="floor"), x, y)[-1] == (
        "aten.floor.default"
    )
    assert _targets(torch.fmod, x, y) == [
        "aten.reciprocal.default", "aten.mul.Tensor", "aten.trunc.default", "aten.mul.Tensor",
        "aten.sub.Tensor",
    ]  # fmt: skip


def test_numbers_and_integers_keep_their_division():
    """By a number it is one unary function (a TABLE); integers divide as integers."""
    x, ids = torch.rand(2, 3), torch.randint(0, 9, (2, 3))
    assert _targets(lambda a: a / 4, x) == ["aten.div.Tensor"]
    assert _targets(lambda a: a // 0.5, x) == ["aten.div.Tensor_mode"]
    assert _targets(lambda a, b: a % (b + 1), ids, ids) == ["aten.add.Tensor", "aten.remainder.Tensor"]


def test_scalar_forms_become_tensor_forms():
    x = torch.rand(2, 3)
    assert _targets(lambda a: torch.ops.aten.add.Scalar(a, 2, alpha=3), x) == ["aten.add.Tensor"]
    assert _targets(lambda a: torch.ops.aten.sub.Scalar(a, 2), x) == ["aten.sub.Tensor"]
