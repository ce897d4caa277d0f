"""Type promotion made explicit (``pipeline/normalise/promotion.py``): an integer or bool
operand that an elementwise operator computes with in float gets a ``_to_copy`` of its own,
folded into a float constant when it is one; integer arithmetic and comparisons with numbers
are left as they are."""

import pytest
import torch
from torch import nn

from pipeline.normalise.promotion import promotions
from pipeline.chain.export import export as export_program
from models.cases import Lambda as Fn

pytestmark = pytest.mark.needs_torch

CAST = "aten._to_copy.default"



class Offsets(nn.Module):
    """An integer buffer added to a float input."""

    def __init__(self):
        super().__init__()
        self.register_buffer("offsets", torch.tensor([1, -2, 3, 0], dtype=torch.int64))

    def forward(self, x):
        return x + self.offsets


def normalised(module, *inputs):
    program = export_program(module.eval(), inputs)
    assert not promotions(program.graph_module)  # nothing left to promote
    return program


def calls(program, target: str) -> list:
    return [n for n in program.graph.nodes if n.op == "call_function" and str(n.target) == target]


X = torch.randn(3, 4)
IDS = torch.randint(0, 5, (3, 4))
I8 = torch.randint(-128, 128, (3, 4), dtype=torch.int8)


@pytest.mark.parametrize(
    "module, inputs",
    [
        pytest.param(Fn(lambda x: torch.eye(4, dtype=torch.int64) + x), (torch.randn(2, 4, 4),),
                     id="eye_int64"),
        pytest.param(Fn(lambda x: x - torch.ones(4, dtype=torch.int32)), (X,), id="ones_int32"),
        pytest.param(Fn(lambda x: torch.scalar_tensor(8, dtype=torch.int8) * x), (X,),
                     id="scalar_tensor_int8"),
        pytest.param(Offsets(), (X,), id="int_buffer"),
    ],
)  # fmt: skip
def test_integer_constants_become_float_constants(module, inputs):
    program = normalised(module, *inputs)
    assert not calls(program, CAST)  # the conversion folded with the constant
    (op,) = [n for n in program.graph.nodes if n.op == "call_function"]
    assert all(a.meta["val"].dtype == torch.float32 for a in op.args if hasattr(a, "meta"))
    torch.testing.assert_close(program.module()(*inputs), module(*inputs), rtol=0, atol=0)


@pytest.mark.parametrize(
    "module, inputs, dtype",
    [
        pytest.param(Fn(lambda x, i: x * i), (X, IDS), torch.int64, id="float_times_ids"),
        pytest.param(Fn(lambda i: i * 0.5), (IDS,), torch.int64, id="ids_times_a_number"),
        pytest.param(Fn(lambda i: torch.div(i, 9.5, rounding_mode="floor")), (I8,), torch.int8,
                     id="div_mode_int8"),
        pytest.param(Fn(lambda x, i, m: torch.where(m, x, i)), (X, IDS, X > 0), torch.int64,
                     id="where_of_ids"),
        pytest.param(Fn(lambda x, i: x > i), (X, IDS), torch.int64, id="compare_tensors"),
    ],
)  # fmt: skip
def test_run_time_integers_get_their_own_conversion(module, inputs, dtype):
    program = normalised(module, *inputs)
    (cast,) = calls(program, CAST)
    assert cast.args[0].meta["val"].dtype == dtype
    assert cast.kwargs["dtype"] == torch.float32
    assert cast.meta.get("stack_trace")  # errors still name the user's line
    torch.testing.assert_close(program.module()(*inputs), module(*inputs), rtol=0, atol=0)


@pytest.mark.parametrize(
    "module, inputs",
    [
        pytest.param(Fn(lambda i: i + 1), (IDS,), id="integer_arithmetic"),
        pytest.param(Fn(lambda i: i > 2.5), (IDS,), id="compare_with_a_number"),
        pytest.param(Fn(lambda x, m: x * m), (X, (X > 0).float()), id="float_times_float_mask"),
        pytest.param(Fn(lambda x: x * x), (X,), id="float_square"),
    ],
)
def test_nothing_to_promote(module, inputs):
    program = normalised(module, *inputs)
    assert not calls(program, CAST)
