"""any / all (REDUCE_ANY / REDUCE_ALL of bool tensors; of ``x != 0`` for number tensors):
exact against torch in the TOSA reference model; Ethos-U85 places them, and for Ethos-U55
(which takes neither operator) the constraint check names them before Vela runs."""

import pytest
import torch

from pipeline.errors import UserError
from pipeline.ethosu.placement import check_npu_constraints
from tests.tosa.lowering_cases import FP, INT8, Fn, run_case, run_vela

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


CASES = [
    pytest.param(Fn(lambda m, x: (x > 0).any(dim=1)), (1, 4, 5), ["REDUCE_ANY"], id="any_dim"),
    pytest.param(Fn(lambda m, x: (x > -0.5).all()), (2, 4, 5), ["REDUCE_ALL"] * 3, id="all_every"),
    pytest.param(Fn(lambda m, x: x.any(dim=-1, keepdim=True)), (2, 3, 6), ["REDUCE_ANY"],
                 id="any_of_numbers"),
    pytest.param(Fn(lambda m, x: torch.all(x < 0.9, dim=(1, 2))), (2, 3, 4), ["REDUCE_ALL"] * 2,
                 id="all_dims"),
]  # fmt: skip


@pytest.mark.parametrize("module, shape, reductions", CASES)
@pytest.mark.parametrize("dtype", [INT8, FP])
def test_any_all_match_torch_exactly(module, shape, reductions, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert [op for op in case.ops() if op.startswith("REDUCE")] == reductions


@pytest.mark.needs_vela
def test_u85_places_any_and_u55_check_names_it(tmp_path):
    module, shape, _ = CASES[0].values
    case, _ = run_case(module, [shape], tmp_path / "case", INT8)
    assert run_vela(case.tosa, "ethos-u85-256", tmp_path / "vela")["npu_op_share"] == 1.0
    with pytest.raises(UserError, match="REDUCE_ANY"):
        check_npu_constraints(case.tosa, "ethos-u55-128")
