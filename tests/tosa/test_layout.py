import pytest

from pipeline.tosa.layout import (
    NHWC,
    default_order,
    inverse,
    layout_name,
    moves_only_unit_dims,
    permute,
)


def test_orders():
    assert default_order(4) == NHWC and default_order(2) == (0, 1)
    assert permute((1, 3, 8, 16), NHWC) == (1, 8, 16, 3)
    assert permute(permute((1, 3, 8, 16), NHWC), inverse(NHWC)) == (1, 3, 8, 16)
    assert layout_name(NHWC) == "NHWC" and layout_name((0, 1, 2)) == "torch"


@pytest.mark.parametrize(
    "shape, perm, expected",
    [
        pytest.param((1, 1, 1, 32), inverse(NHWC), True, id="nhwc_1x1_to_nchw"),
        pytest.param((1, 4, 4, 32), inverse(NHWC), False, id="nhwc_to_nchw_moves"),
        pytest.param((1, 4, 4, 1), inverse(NHWC), True, id="single_channel"),
        pytest.param((2, 3), (1, 0), False, id="matrix_transpose"),
    ],
)
def test_moves_only_unit_dims(shape, perm, expected):
    assert moves_only_unit_dims(shape, perm) is expected
