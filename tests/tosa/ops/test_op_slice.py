"""SLICE (aten.slice.Tensor: ``x[:, a:b]``, ``narrow``, ``split``/``chunk`` pieces, and
``x[..., start::step]``) and the squeeze/unsqueeze views around it: exact against torch."""

import pytest
import torch

from tests.tosa.lowering_cases import A16W8, FP, INT8, Fn, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


def _split(x):
    a, b, c = x.split([1, 2, 3], 1)  # uneven sizes
    return c, a, b


SHAPES = [
    pytest.param(Fn(lambda m, x: x[:, 1:3]), (1, 4, 5, 6), ["SLICE"], id="nhwc_channels"),
    pytest.param(Fn(lambda m, x: x[..., -3:]), (2, 7), ["SLICE"], id="rank2_negative_start"),
    pytest.param(
        Fn(lambda m, x: x[:, :1].squeeze(1).unsqueeze(-1)), (1, 4, 6), ["SLICE", "RESHAPE"],
        id="cls_token_squeeze_unsqueeze",
    ),
    pytest.param(Fn(lambda m, x: x.narrow(-1, 100, 157)), (3, 257), ["SLICE"], id="narrow_257"),
    pytest.param(Fn(lambda m, x: _split(x)), (2, 6, 3), ["SLICE"] * 3, id="split_uneven"),
    pytest.param(Fn(lambda m, x: x.chunk(3, 0)[2]), (800,), ["SLICE"], id="chunk_800_last"),
    pytest.param(Fn(lambda m, x: x[0:1, 1:2, :, 1:]), (1, 3, 1, 2, 5), ["SLICE", "SLICE"],
                 id="rank5_sizes_1"),
]  # fmt: skip


@pytest.mark.parametrize("module, shape, ops", SHAPES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_slice_matches_torch_exactly(module, shape, ops, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    assert all(o.get("max_abs_diff_int", o.get("max_abs_diff")) == 0 for o in report["outputs"])
    assert case.ops() == ops


# A step above 1: a 1x1 MAX_POOL2D with that stride (strides 2, 3), a SLICE of blocks
# (larger strides), a channel-picking CONV2D along the innermost axis.
STRIDED = [
    pytest.param(Fn(lambda m, x: x[:, ::2]), (2, 6, 5), "MAX_POOL2D", id="tokens_even"),
    pytest.param(Fn(lambda m, x: x[:, 1::2]), (1, 257, 16), "MAX_POOL2D", id="odd_257"),
    pytest.param(Fn(lambda m, x: x[..., ::2, 1::2]), (1, 3, 8, 9), "MAX_POOL2D",
                 id="focus_space_to_depth"),
    pytest.param(Fn(lambda m, x: x[:, :, 1::4]), (1, 4, 30, 8), "SLICE", id="step4_h"),
    pytest.param(Fn(lambda m, x: x[:, ::3]), (1, 9, 4, 4), "CONV2D", id="nchw_channels_step3"),
    pytest.param(Fn(lambda m, x: torch.cat([x[..., ::2], x[..., 1::2]], -1)), (1, 16, 64),
                 "CONV2D", id="rope_even_odd"),
    pytest.param(Fn(lambda m, x: x[1::2]), (257,), "CONV2D", id="rank1_257"),
    pytest.param(Fn(lambda m, x: x[1::2]), (800,), "MAX_POOL2D", id="rank1_800_weights_too_big"),
    pytest.param(Fn(lambda m, x: x[:, :, 2:7:5]), (2, 3, 9, 2, 2), "SLICE", id="rank5_one_left"),
]  # fmt: skip


@pytest.mark.parametrize("module, shape, op", STRIDED)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_strided_slice_matches_torch(module, shape, op, dtype, tmp_path):
    case, report = run_case(module, [shape], tmp_path, dtype)
    assert report["passed"]
    output = report["outputs"][0]
    assert output.get("max_abs_diff_int", output.get("max_abs_diff")) == 0
    assert op in case.ops()


def test_in_place_strided_update(tmp_path):
    """``x[:, 1::2] += y``: the functional write-back is one slice_scatter, exact but for
    the ADD's rounding."""

    def update(m, x, y):
        x = x.clone()
        x[:, 1::2] += y
        return x

    case, report = run_case(Fn(update), [(2, 6), (2, 3)], tmp_path)
    assert report["passed"]
    assert case.ops().count("CONCAT") == 1
