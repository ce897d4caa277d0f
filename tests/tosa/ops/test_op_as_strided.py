"""as_strided_copy / torch.as_strided: a constant index map of the input (RESHAPE, SLICEs, a
one-hot CONV2D or GATHER) against torch in the TOSA reference model."""

import pytest
import torch

from pipeline.errors import UnsupportedOperatorError
from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, run_case, run_vela

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def copy(size, stride, offset=0):
    return Fn(lambda m, x: torch.ops.aten.as_strided_copy.default(x, size, stride, offset))


def view(size, stride, offset=0):
    """What users write: a strided view of an activation, then used."""
    return Fn(lambda m, x: torch.as_strided(x * 2, size, stride, offset) + 1)


CASES = [
    pytest.param(copy((3, 8), (8, 1)), (4, 6), INT8, [], id="reshape_2d"),
    pytest.param(copy((1, 2, 3, 4), (24, 12, 4, 1)), (2, 3, 4), A16W8, None, id="expand_rank"),
    pytest.param(copy((3, 3), (1, 3)), (3, 3), INT8, None, id="transposed_strides"),
    pytest.param(copy((2, 4), (4, 1), 4), (4, 4), A16W8, ["SLICE"], id="offset_window"),
    pytest.param(view((4, 3), (2, 1)), (10,), INT8, None, id="overlapping_windows"),
    pytest.param(view((2, 2, 3), (1, 6, 2), 1), (3, 5), A16W8, None, id="rank3_offset_view"),
    pytest.param(copy((3, 4), (1, 3)), (2, 6), FP, None, id="fp_transposed"),
]


@pytest.mark.parametrize("module, shape, dtype, ops", CASES)
def test_as_strided_matches_torch(module, shape, dtype, ops, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    if ops is not None:  # the operators that move values, besides RESHAPEs
        assert [o for o in case.ops() if o not in ("RESHAPE", "MUL", "RESCALE", "ADD")] == ops


def test_as_strided_of_a_strided_view_is_refused(tmp_path):
    """``x.t() + 1`` keeps the transposed strides: its storage order is no map of x's."""
    module = Fn(lambda m, x: torch.as_strided(x.t() + 1, (2, 2), (1, 2)))
    with pytest.raises(UnsupportedOperatorError, match="strided view of another tensor"):
        run_case(module, [(3, 4)], tmp_path)


@pytest.mark.slow
@pytest.mark.needs_vela
def test_as_strided_gather_runs_on_the_npu(tmp_path):
    case, report = run_case(view((4, 3), (2, 1)), [(10,)], tmp_path, INT8)
    assert report["passed"]
    for variant, accelerator in (("u55", "ethos-u55-128"), ("u85", "ethos-u85-256")):
        figures = run_vela(case.variant(variant), accelerator, tmp_path / variant)
        assert figures["npu_op_share"] == 1.0
