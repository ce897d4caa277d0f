"""Ethos-U constraints before Vela: each rule against a real Vela failure or success."""

import pytest
from torch import nn

from pipeline.errors import UserError
from pipeline.tosa.npu_constraints import check_npu_constraints, family, read_operators
from tests.models.networks import vela_args
from tests.tosa.lowering_cases import FP, lower_case

pytestmark = [pytest.mark.needs_torch]


def test_operators_carry_the_fx_node_and_source_line(tmp_path):
    case = lower_case(nn.Sequential(nn.Conv2d(3, 4, 3)), [(1, 3, 6, 6)], tmp_path)
    operators = read_operators(case.tosa)
    assert [op.op for op in operators] == ["CONV2D", "RESCALE"]
    assert operators[0].location.startswith("conv2d")
    assert operators[0].inputs[0].dtype == "int8"


@pytest.mark.needs_vela
def test_padded_avg_pool_above_8x8_fails_on_u55_only(tmp_path):
    """Vela's own error here is 'Non-passthrough operation (AvgPool) could not run on NPU'."""
    from pipeline.stages.vela import run_vela

    pool = nn.AvgPool2d(9, 1, 4, count_include_pad=False)
    case = lower_case(pool, [(1, 4, 12, 12)], tmp_path / "case")
    with pytest.raises(
        UserError, match=r"AVG_POOL2D on ethos-u55-128 must have a kernel of at most 8x8"
    ):
        check_npu_constraints(case.tosa, "ethos-u55-128", where="test/vela")
    # The Vela stage runs the check first, so the build fails with the rule, not Vela's text.
    with pytest.raises(UserError, match=r"u55/vela: 1 operator\(s\) outside the ethos-u55-128"):
        run_vela(case.tosa, tmp_path / "u55", vela_args("ethos-u55-128"), where="u55/vela")
    check_npu_constraints(case.tosa, "ethos-u85-256")
    run_vela(case.tosa, tmp_path / "u85", vela_args("ethos-u85-256"))


@pytest.mark.needs_vela
def test_batched_avg_pool_passes_where_vela_splits_the_batch(tmp_path):
    """Vela's table says N=1 for AVG_POOL2D on U55, but it splits the batch itself: no error."""
    from pipeline.stages.vela import run_vela

    case = lower_case(nn.AvgPool2d(2), [(2, 4, 8, 8)], tmp_path / "case")
    check_npu_constraints(case.tosa, "ethos-u55-128")
    run_vela(case.tosa, tmp_path / "u55", vela_args("ethos-u55-128"))


def test_padded_avg_pool_up_to_8x8_passes(tmp_path):
    pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
    case = lower_case(pool, [(1, 4, 12, 12)], tmp_path)
    check_npu_constraints(case.tosa, "ethos-u55-128")


def test_float_graph_is_rejected_on_every_npu(tmp_path):
    case = lower_case(nn.Conv2d(3, 4, 3), [(1, 3, 6, 6)], tmp_path, FP)
    for accelerator in ("ethos-u55-128", "ethos-u85-256"):
        with pytest.raises(UserError, match=r"conv2d.*CONV2D on .* must use integer tensors only"):
            check_npu_constraints(case.tosa, accelerator)


def test_unknown_accelerator_is_a_user_error():
    assert family("ethos-u65-512") == "u65"
    with pytest.raises(UserError, match="accelerator must be ethos-<u55|u65|u85>-<macs>"):
        family("ethos-u99-1")


@pytest.mark.needs_vela
def test_int16_matmul_fails_on_u55_only(tmp_path):
    from pipeline.stages.vela import run_vela
    from tests.tosa.lowering_cases import A16W8

    class Matmul(nn.Module):
        def forward(self, a, b):
            return a @ b

    case = lower_case(Matmul(), [(1, 4, 8), (1, 8, 4)], tmp_path / "case", A16W8)
    with pytest.raises(UserError, match=r"matmul.*MATMUL on ethos-u55-128 must take int8 inputs"):
        check_npu_constraints(case.tosa, "ethos-u55-128")
    # The Vela stage runs the check first, so the build fails with the rule, not Vela's text.
    with pytest.raises(UserError, match=r"u55/vela: 1 operator\(s\) outside the ethos-u55-128"):
        run_vela(case.tosa, tmp_path / "u55", vela_args("ethos-u55-128"), where="u55/vela")
    check_npu_constraints(case.tosa, "ethos-u85-256")
