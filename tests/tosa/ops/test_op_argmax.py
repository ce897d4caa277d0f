"""argmax / argmin -> ARGMAX (argmin of ``~code`` / ``-x``): the same indices as torch's
quantized graph in the TOSA reference model; Ethos-U85 places every axis, and for Ethos-U55
the constraint check names a search along any axis but the innermost before Vela runs."""

import pytest
import torch

from pipeline.errors import UserError
from pipeline.ethosu.placement import check_npu_constraints
from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, run_case, run_vela

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

CASES = [
    pytest.param(Fn(lambda m, x: torch.argmax(x, dim=1)), (2, 5, 3), id="middle_dim"),
    pytest.param(Fn(lambda m, x: x.argmax(-1, keepdim=True)), (1, 3, 4, 6), id="keepdim_w"),
    pytest.param(Fn(lambda m, x: torch.argmax(x)), (3, 4), id="flattened"),
    pytest.param(Fn(lambda m, x: torch.argmin(x, dim=0)), (4, 5), id="argmin"),
    pytest.param(Fn(lambda m, x: x.argmax(1)), (1, 8, 4, 4), id="classes_nchw"),
]


@pytest.mark.parametrize("module, shape", CASES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_argmax_matches_torch_exactly(module, shape, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert report["outputs"][0]["max_abs_diff" if dtype == FP else "max_abs_diff_int"] == 0
    assert "ARGMAX" in case.ops()


@pytest.mark.needs_vela
@pytest.mark.parametrize("index, u55", [(4, True), (2, True), (0, False)])
def test_argmax_placement(index, u55, tmp_path):
    module, shape = CASES[index].values
    case, _ = run_case(module, [shape], tmp_path / "case", INT8)
    assert run_vela(case.tosa, "ethos-u85-256", tmp_path / "u85")["npu_op_share"] == 1.0
    variant = case.variant("u55")
    if u55:
        check_npu_constraints(variant, "ethos-u55-128")
        assert run_vela(variant, "ethos-u55-128", tmp_path / "u55")["npu_op_share"] == 1.0
    else:
        with pytest.raises(UserError, match="ARGMAX on ethos-u55-128 must search the innermost"):
            check_npu_constraints(variant, "ethos-u55-128")


@pytest.mark.needs_vela
def test_int16_argmax_is_named_on_u55(tmp_path):
    """Vela 5.2 refuses an int16 ARGMAX on Ethos-U55 even along the innermost axis
    ('Non-passthrough operation (ArgMax)'): the check names it first; U85 compiles it."""
    from pipeline.errors import StageError
    from pipeline.chain.vela import vela_args
    from tests.tosa.lowering_cases import A16W8

    module, shape = CASES[4].values
    case, _ = run_case(module, [shape], tmp_path / "case", A16W8)
    variant = case.variant("u55")
    with pytest.raises(UserError, match="ARGMAX on ethos-u55-128 must take int8 values"):
        check_npu_constraints(variant, "ethos-u55-128")
    from pipeline.ethosu.vela import run_vela as vela_stage

    raw = ["--accelerator-config=ethos-u55-128", *vela_args("ethos-u55-128")[2:]]  # unchecked
    with pytest.raises(StageError, match=r"Non-passthrough operation \(ArgMax\)"):
        vela_stage(variant, tmp_path / "raw", raw)
    assert run_vela(case.tosa, "ethos-u85-256", tmp_path / "u85")["npu_op_share"] == 1.0
