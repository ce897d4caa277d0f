"""pad_strided_conv (Ethos-U55/U65 variant): a padded convolution with a stride over 3, which
Vela 5.2 refuses there, reads its input bordered with the zero point instead (a depthwise one
becomes a CONV2D) - the same integers as the common graph, and Vela compiles it."""

import pytest
from torch import nn

from pipeline.errors import UserError
from pipeline.tosa.flatbuffer import operator_names
from pipeline.ethosu.placement import check_npu_constraints
from tests.tosa.lowering_cases import A16W8, INT8, run_case, run_vela

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref, pytest.mark.needs_vela]

CONVS = [
    pytest.param(nn.Conv2d(1, 1, (2, 4), (2, 4), 1), (1, 1, 14, 10), id="kernel_2x4_stride_2x4"),
    pytest.param(nn.Conv2d(3, 8, 7, 4, 3), (1, 3, 32, 32), id="stem_7x7_stride_4"),
    pytest.param(nn.Conv2d(4, 8, 3, (4, 1), 1, groups=4), (1, 4, 17, 9), id="depthwise_x2_4x1"),
]


@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize("conv, shape", CONVS)
def test_strided_padded_conv_compiles_for_u55_with_the_same_integers(conv, shape, dtype,
                                                                      tmp_path):  # fmt: skip
    case, report = run_case(conv, [shape], tmp_path, dtype)
    variant = report["variants"]["u55"]
    assert report["passed"] and variant["passed"]
    common, u55 = report["outputs"][0], variant["outputs"][0]
    assert u55["max_abs_diff_int"] == common["max_abs_diff_int"]
    assert u55["exact_match_fraction"] == common["exact_match_fraction"]
    ops = operator_names(case.variant("u55"))
    assert "CONCAT" in ops and "DEPTHWISE_CONV2D" not in ops
    with pytest.raises(UserError, match="must (pad nothing when a stride is over 3|have strides)"):
        check_npu_constraints(case.tosa, "ethos-u55-128")
    figures = run_vela(case.variant("u55"), "ethos-u55-128", tmp_path / "vela")
    assert figures["npu_op_share"] == 1.0
