import math

import numpy as np
import pytest

from pipeline.verify.error_bound import BIAS_SCALE_ERROR, FLOAT32_MARGIN, Bounds, tolerance
from pipeline.tosa.flatbuffer import Block, Operator, Tensor


def _graph(*ops, consts=None, types=None):
    """A block whose activations are int8 [1, 4] (``types`` overrides), ``consts`` name ->
    (dtype, values); ``x`` is the graph input."""
    consts = consts or {}
    tensors = {name: Tensor(dtype, np.asarray(v).shape, np.asarray(v)) for name, (dtype, v)
               in consts.items()}  # fmt: skip
    for op in ops:
        for name in (*op.inputs, *op.outputs):
            tensors.setdefault(name, Tensor((types or {}).get(name, "int8"), (1, 4), None))
    return Block(tensors, list(ops), ["x"], [ops[-1].outputs[0]])


def _rescale(src, out, multiplier, shift, zp=0, bits=32):
    consts = {f"{out}_m": (f"int{bits}", [multiplier]), f"{out}_s": ("int8", [shift]),
              f"{out}_izp": ("int32", [0]), f"{out}_ozp": ("int8", [zp])}  # fmt: skip
    op = Operator("RESCALE", (src, *consts), (out,), {"rounding_mode": "SINGLE_ROUND"})
    return op, consts


def test_integer_scale_is_exact_and_a_fraction_rounds_once():
    unit, c1 = _rescale("x", "wide", 1 << 30, 30)  # scale 1
    narrow, c2 = _rescale("wide", "y", 3 << 29, 32)  # scale 0.375
    bounds = Bounds(_graph(unit, narrow, consts={**c1, **c2}), [])
    assert bounds.layer("wide") == (0.0, ["RESCALE"])
    bound, ops = bounds.layer("y")
    assert ops == ["RESCALE", "RESCALE"]
    assert bound == pytest.approx(0.5 + 0.5 / (3 << 29) * 128)
    assert tolerance(bound) == 1


def test_16_bit_multiplier_error_is_about_one_lsb_at_int16():
    op, consts = _rescale("acc", "y", (1 << 14) + 1, 20, bits=16)
    block = _graph(Operator("CONV2D", ("x", "w"), ("acc",), {}), op,
                   consts={**consts, "w": ("int8", np.ones((4, 1, 1, 4)))},
                   types={"acc": "int48", "y": "int16"})  # fmt: skip
    bound, _ = Bounds(block, []).layer("y")
    assert bound == pytest.approx(0.5 + 0.5 / ((1 << 14) + 1) * 32768, rel=1e-9)
    assert tolerance(bound) == 1


def test_a_later_rescale_scales_the_earlier_rounding():
    pool = Operator("AVG_POOL2D", ("x",), ("pooled",), {})
    op, consts = _rescale("pooled", "y", 1 << 30, 29)  # scale 2
    bound, ops = Bounds(_graph(pool, op, consts=consts), []).layer("y")
    assert ops == ["AVG_POOL2D", "RESCALE"]
    assert bound == pytest.approx((0.5 + 2.0**-20) * 2)  # an integer scale adds no rounding
    assert tolerance(bound) == 1


def test_boundaries_are_exact_and_moves_keep_their_input_bound():
    pool = Operator("AVG_POOL2D", ("x",), ("pooled",), {})
    moves = [Operator("RESHAPE", ("pooled",), ("r",), {}),
             Operator("MAX_POOL2D", ("r",), ("m",), {})]  # fmt: skip
    block = _graph(pool, *moves)
    assert Bounds(block, []).layer("m")[0] == pytest.approx(0.5 + 2.0**-20)
    assert Bounds(block, ["pooled"]).layer("m") == (0.0, ["RESHAPE", "MAX_POOL2D"])


def test_sums_and_weights_scale_an_inexact_input():
    pool = Operator("AVG_POOL2D", ("x",), ("p",), {})
    weights = np.array([[1, -2, 3, 0], [4, 4, 0, 0]]).reshape(2, 1, 1, 4)
    conv = Operator("CONV2D", ("p", "w", "b"), ("acc",), {})
    add = Operator("ADD", ("acc", "acc"), ("sum",), {})
    block = _graph(pool, conv, add, consts={"w": ("int8", weights), "b": ("int32", [1000, 0])})
    bounds = Bounds(block, [])
    expected = (0.5 + 2.0**-20) * 8 + 1000 * BIAS_SCALE_ERROR
    assert bounds.layer("acc")[0] == pytest.approx(expected)
    assert bounds.layer("sum")[0] == pytest.approx(2 * expected)
    assert Bounds(block, ["p"]).layer("acc")[0] == pytest.approx(1000 * BIAS_SCALE_ERROR)


def test_int8_table_entries_are_rounded_and_amplify_input_error():
    table = Operator("TABLE", ("x", "t"), ("y",), {})
    entries = ("int8", np.clip(np.arange(-128, 128) * 3, -128, 127))
    assert Bounds(_graph(table, consts={"t": entries}), []).layer("y")[0] == 0.5 + FLOAT32_MARGIN
    pool = Operator("AVG_POOL2D", ("x",), ("p",), {})
    behind = Operator("TABLE", ("p", "t"), ("y",), {})
    bound, _ = Bounds(_graph(pool, behind, consts={"t": entries}), []).layer("y")
    assert bound == pytest.approx(0.5 + FLOAT32_MARGIN + 3 * (0.5 + 2.0**-20))


def test_an_unknown_operator_may_round_once():
    op = Operator("INTDIV", ("x", "x"), ("y",), {})
    assert Bounds(_graph(op), []).layer("y") == (1.0, ["INTDIV"])


@pytest.mark.parametrize(
    "bound, expected",
    [(0.0, 0), (0.5, 1), (0.5000001, 1), (1.4999, 1), (1.5, 2), (math.inf, None)],
)
def test_tolerance(bound, expected):
    assert tolerance(bound) == expected


def test_int16_interpolation_bound_is_local_to_the_input_interval():
    from pipeline.tosa.functions.table_zoom import interpolation_bound

    steps = np.arange(513, dtype=np.int64)
    entries = np.minimum(steps * steps // 4, 30000)  # smooth, then saturated from entry 347
    bounds = interpolation_bound(entries, np.array([-32768, 0, 32767 - 128 * 200]))
    # second differences of 0 or 1 (2/4, floored): 0.5 + margin + 2 * (1 + 2) / 8 at most
    assert np.all(bounds <= 0.5 + FLOAT32_MARGIN * 4 + 2 * (1 + 2) / 8)
    # the interval next to the saturation kink gets its second difference, far ones do not
    kink = interpolation_bound(entries, np.array([(346 << 7) - 32768]))
    assert kink[0] > 10 * bounds[0]


def test_interpolated_table_is_found_behind_its_rescale():
    table = Operator("TABLE", ("x", "t"), ("wide",), {})
    op, consts = _rescale("wide", "y", 1 << 30, 37)  # 1/128
    entries = ("int16", np.arange(513) * 64 - 16384)
    block = _graph(table, op, consts={**consts, "t": entries},
                   types={"x": "int16", "wide": "int32", "y": "int16"})  # fmt: skip
    found = Bounds(block, []).interpolated_table("y")
    assert (found.source, found.scale, found.zoom) == ("x", 1 / 128, 1)
    assert found.entries.size == 513
    assert found.rest == pytest.approx(0.5 + 0.5 / (1 << 30) * 32768)
    assert Bounds(block, []).interpolated_table("wide") is None


def test_zoomed_table_reads_its_source_times_the_zoom_and_allows_flat_where_it_saturates():
    from pipeline.tosa.functions.table_zoom import FLAT

    zoom, c1 = _rescale("x", "zoomed", 3 << 30, 30)  # x 3, exact
    table = Operator("TABLE", ("zoomed", "t"), ("wide",), {})
    narrow, c2 = _rescale("wide", "y", 1 << 30, 37)
    entries = ("int16", np.minimum(np.arange(513) * 64, 30000) - 16384)
    types = {"x": "int16", "zoomed": "int16", "wide": "int32", "y": "int16"}
    block = _graph(zoom, table, narrow, consts={**c1, **c2, "t": entries}, types=types)
    found = Bounds(block, []).interpolated_table("y")
    assert (found.source, found.zoom) == ("x", 3)
    inside, saturated = found.bound(np.array([100, 20000]))
    assert inside == pytest.approx(found.bound(np.array([-100]))[0])
    ends = np.array([32767 // 3]), np.array([32767])  # both read the table's last interval
    assert found.bound(ends[1])[0] - found.bound(ends[0])[0] == pytest.approx(FLAT)
    assert saturated == found.bound(ends[1])[0]
    assert Bounds(block, []).layer("y")[0] >= FLAT


def test_offset_zoom_reads_its_source_plus_the_offset_times_the_zoom():
    """table_split's split above a code: RESCALE to int32 by 1, ADD c, RESCALE to int16 by k."""
    widen, c1 = _rescale("x", "wide_x", 1 << 30, 30)
    add = Operator("ADD", ("wide_x", "c"), ("moved",), {})
    zoom, c2 = _rescale("moved", "zoomed", 3 << 30, 30)  # x 3
    table = Operator("TABLE", ("zoomed", "t"), ("y",), {})
    consts = {**c1, **c2, "c": ("int32", [[100]]), "t": ("int16", np.zeros(513, np.int64))}
    types = {"x": "int16", "wide_x": "int32", "moved": "int32", "zoomed": "int16", "y": "int32"}
    bounds = Bounds(_graph(widen, add, zoom, table, consts=consts, types=types), [])
    assert bounds._zoom("zoomed") == ("x", 3, 100)
    assert bounds._reach("zoomed") == (-32768, 32767)  # saturates at both ends
    assert bounds.interpolated_table("y") is None  # no per-element form with an offset
