"""Constants built in forward() and integer tensors as operands of float arithmetic:
``torch.eye(n, dtype=torch.int64) + x``, ``x + torch.ones(...)``, ``x * torch.arange(n)``,
``torch.scalar_tensor(4096, dtype=torch.int16) + x``, an integer buffer, ``x * ids``,
``torch.div(i8, 9.5, rounding_mode="floor")``. Type promotion is explicit after the
normalisation (``pipeline/normalise/promotion.py``), a constant operand on a grid gets exact
qparams (``pipeline/quant/constants.py``), an int8 tensor made float is its own codes; each
form verified against torch in the TOSA reference model and compiled by Vela for both NPUs."""

import pytest
import torch
from torch import nn

from pipeline.normalise.constants import constant_values
from pipeline.programs import load_program
from pipeline.ethosu.placement import check_npu_constraints
from tests.tosa.lowering_cases import A16W8, INT8, Fn, integers, run_case, run_vela

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def int8s(shape):
    return lambda g: torch.randint(-128, 128, shape, generator=g, dtype=torch.int8)


class Offsets(nn.Module):
    """An int64 buffer, added in place: ``x += self.offsets``."""

    def __init__(self):
        super().__init__()
        self.register_buffer("offsets", torch.tensor([3, -1, 0, 2, 5, -4]))

    def forward(self, x):
        x = x * 2.0
        x += self.offsets
        return x


CONSTANTS = [
    pytest.param(Fn(lambda m, x: torch.eye(10, dtype=torch.int64) + x), [(10,)], id="eye_int64"),
    pytest.param(Fn(lambda m, x: torch.eye(3) + x), [(2, 5, 3, 3)], id="eye_float_rank4"),
    pytest.param(Fn(lambda m, x: x + torch.ones(3, 4, dtype=torch.int32)), [(2, 3, 4)],
                 id="ones_int32_rank3"),
    pytest.param(Fn(lambda m, x: torch.zeros(6, dtype=torch.int64) - x), [(4, 6)],
                 id="zeros_minus_x"),
    pytest.param(Fn(lambda m, x: x * torch.arange(6)), [((4, 6), 3.0)], id="times_arange"),
    pytest.param(Fn(lambda m, x: x - torch.arange(-8, 8).reshape(4, 4) * 0.25), [(2, 4, 4)],
                 id="minus_quarters"),
    pytest.param(Fn(lambda m, x: torch.scalar_tensor(16 * 16 * 16, dtype=torch.int16) + x),
                 [(1, 1)], id="scalar_tensor_int16"),
    pytest.param(Fn(lambda m, x: torch.full((4,), 3, dtype=torch.int8) * x), [(2, 4)],
                 id="full_int8_times"),
    pytest.param(Offsets(), [(2, 6)], id="inplace_int_buffer"),
]  # fmt: skip


def dequantized_constants(case) -> list[torch.Tensor]:
    """The real values torch's quantized graph reads for each constant it dequantizes."""
    program = load_program(case.path("quantized.pt2"))
    values = constant_values(program)
    return [
        node.target(values[node.args[0].name], *node.args[1:])
        for node in program.graph.nodes
        if "dequantize_per_tensor" in str(node.target) and node.args[0].name in values
    ]


@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize("module, shapes", CONSTANTS)
def test_constant_operands_are_exact(module, shapes, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff_int"] <= (0 if dtype == INT8 else 1)
    constants = dequantized_constants(case)
    assert constants  # the constant was quantized, not left float
    for value in constants:  # every constant here lies on a grid of 1/4: exactly on it
        assert torch.equal(value * 4, torch.round(value * 4))


RUN_TIME = [
    pytest.param(Fn(lambda m, x, i: x * i), [(4, 8), integers((4, 8), 5)], id="times_ids"),
    pytest.param(Fn(lambda m, i: i * 0.5 + 1), [integers((2, 3, 8), 100)], id="ids_times_half"),
    pytest.param(Fn(lambda m, x, i: x + i), [((4, 8), 100.0), int8s((4, 8))], id="plus_int8"),
    pytest.param(Fn(lambda m, x, i, k: torch.where(k, x, i)),
                 [(4, 8), integers((4, 8), 3), lambda g: torch.rand(4, 8, generator=g) > 0.5],
                 id="where_ids"),
    pytest.param(Fn(lambda m, x, i: x * 3 > i), [(4, 8), integers((4, 8), 3)], id="above_ids"),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize("module, shapes", RUN_TIME)
def test_run_time_integer_operands(module, shapes, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) <= 1


DIV_MODES = [
    pytest.param("floor", 9.5, (4, 8), id="floor_9.5"),
    pytest.param("trunc", -2.5, (2, 4, 8), id="trunc_negative_rank3"),
    pytest.param("floor", 0.75, (1, 2, 3, 4), id="floor_0.75_rank4"),
]


@pytest.mark.parametrize("mode, divisor, shape", DIV_MODES)
def test_int8_divided_by_a_number_with_a_mode_is_one_exact_table(mode, divisor, shape, tmp_path):
    """``torch.div(i8, 9.5, rounding_mode="floor")`` is float: the int8 tensor is its own
    codes (scale 1, no operator), the division one TABLE of torch's own values (in float64,
    as verify computes them: torch's float32 quantize can round the other way where the
    quotient over the output scale is within float32's error of a tie, 4/3 steps here)."""
    module = Fn(lambda m, i: torch.div(i, divisor, rounding_mode=mode))
    case, report = run_case(module, [int8s(shape)], tmp_path)
    assert report["passed"] and report["outputs"][0]["max_abs_diff_int"] <= 1
    assert case.ops() == ["TABLE"]


def test_int8_divided_with_a_mode_at_int16(tmp_path):
    module = Fn(lambda m, i: torch.div(i, 9.5, rounding_mode="floor"))
    case, report = run_case(module, [int8s((4, 8))], tmp_path, A16W8)
    assert report["passed"] and report["outputs"][0]["max_abs_diff_int"] <= 1


@pytest.mark.needs_vela
@pytest.mark.parametrize("accelerator", ["ethos-u55-128", "ethos-u85-256"])
def test_constant_and_integer_operands_run_on_the_npu(accelerator, tmp_path):
    module = Fn(lambda m, x, i: torch.eye(8, dtype=torch.int64) + x * torch.arange(8)
                + torch.div(i, 9.5, rounding_mode="floor"))  # fmt: skip
    case, _ = run_case(module, [(2, 8, 8), int8s((8, 8))], tmp_path / "case")
    variant = case.variant(accelerator.split("-")[1])
    check_npu_constraints(variant, accelerator)
    assert run_vela(variant, accelerator, tmp_path / "vela")["npu_op_share"] == 1.0
