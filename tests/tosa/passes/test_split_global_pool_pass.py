"""split_global_pool (Ethos-U55/U65 variant): op counts, exactness in the TOSA reference model
against the AVG_POOL2D it replaces, the cases it leaves alone, and Vela placement on U55."""

import copy

import numpy as np
import pytest

from pipeline.tosa import serialize
from pipeline.tosa.graph import TosaGraph
from pipeline.tosa.passes import split_global_pool_pass
from pipeline.verify.reference_model import run_reference_model
from pipeline.tosa.spec import parse_spec
from tests.tosa.lowering_cases import run_vela


def pool_graph(shape, spec="TOSA-1.0+INT+int16", zero_points=(-3, 5), kernel=None, pad=(0, 0, 0, 0)):
    """x (int8, NHWC ``shape``) -> AVG_POOL2D over ``kernel`` (default: all of H x W)."""
    graph = TosaGraph(parse_spec(spec))
    n, h, w, c = shape
    kernel = kernel or (h, w)
    x = graph.add_input("x", shape, "int8")
    out_hw = [(size + p0 + p1 - k) // k + 1 for size, k, p0, p1 in
              zip((h, w), kernel, pad[0::2], pad[1::2])]
    out = graph.add_tensor("y", (n, *out_hw, c), "int8")
    in_zp = graph.add_const("in_zp", np.array([zero_points[0]]), "int8")
    out_zp = graph.add_const("out_zp", np.array([zero_points[1]]), "int8")
    graph.add_op("AVG_POOL2D", [x, in_zp, out_zp], [out], kernel=list(kernel),
                 stride=list(kernel), pad=list(pad), acc_type="int32")
    graph.outputs = [out]
    return graph


def rewritten(graph):
    copied = copy.deepcopy(graph)
    split_global_pool_pass.run(copied)
    return copied


@pytest.mark.parametrize("shape", [
    pytest.param((1, 8, 8, 64), id="resnet8_8x8x64"),
    pytest.param((1, 7, 7, 32), id="7x7_not_a_power_of_two"),
    pytest.param((1, 25, 5, 16), id="ds_cnn_like_25x5"),
])
def test_global_pool_becomes_two_sums_and_a_rescale(shape):
    graph = pool_graph(shape)
    after = rewritten(graph)
    assert graph.op_counts() == {"AVG_POOL2D": 1}
    assert after.op_counts() == {"DEPTHWISE_CONV2D": 2, "RESCALE": 2}
    assert [after.tensors[o.outputs[0]].dtype for o in after.operators] == [
        "int32", "int16", "int48", "int8"]
    assert after.outputs == graph.outputs  # consumers keep reading the same tensor


@pytest.mark.needs_tosa_ref
@pytest.mark.parametrize("shape, zero_points, low, high", [
    pytest.param((1, 8, 8, 64), (-3, 5), -128, 128, id="8x8x64_random"),
    pytest.param((1, 8, 8, 64), (-3, 5), -5, 0, id="8x8x64_many_rounding_ties"),
    pytest.param((1, 7, 7, 32), (-3, 5), -128, 128, id="7x7x32_random"),
    pytest.param((1, 10, 10, 16), (0, 0), -2, 3, id="10x10_ties_of_an_even_count"),
    pytest.param((1, 128, 2, 8), (-128, 0), 126, 128, id="128_rows_near_the_int16_limit"),
])
def test_sums_match_the_pool_bit_for_bit(shape, zero_points, low, high, tmp_path):
    graph = pool_graph(shape, zero_points=zero_points)
    after = rewritten(graph)
    assert "AVG_POOL2D" not in after.op_counts()
    serialize.write(graph, tmp_path / "pool.tosa")
    serialize.write(after, tmp_path / "sums.tosa")
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.integers(low, high, shape).astype(np.int8)
        want = run_reference_model(tmp_path / "pool.tosa", {"x": x}, ["y"], where="pool")["y"]
        got = run_reference_model(tmp_path / "sums.tosa", {"x": x}, ["y"], where="sums")["y"]
        np.testing.assert_array_equal(got, want)


def test_the_division_is_checked_against_every_reachable_sum():
    # 64 cells: AVG_POOL2D rounds -0.5 to -1 (its reciprocal is a hair above 1/64); a plain
    # 2**-6 would round it to 0, so the pass picks 16385 * 2**-20 instead.
    assert split_global_pool_pass.matching_scale(64, -64 * 125, 64 * 130) == (16385, 20)
    # 126 cells of one sign need ties rounded up; no 16-bit multiplier matches every sum.
    assert split_global_pool_pass.matching_scale(126, 0, 126 * 255) is None


@pytest.mark.parametrize("graph", [
    pytest.param(pool_graph((1, 8, 8, 64), spec="TOSA-1.0+INT"), id="no_int16_in_the_spec"),
    pytest.param(pool_graph((1, 6, 6, 64)), id="36_cells_cheaper_as_a_pool"),
    pytest.param(pool_graph((1, 1, 64, 64)), id="a_single_row"),
    pytest.param(pool_graph((1, 129, 2, 8), zero_points=(-128, 0)),
                 id="column_sums_would_overflow_int16"),
    pytest.param(pool_graph((1, 63, 2, 8), zero_points=(-128, 0)), id="no_matching_division"),
    pytest.param(pool_graph((1, 16, 16, 8), kernel=(8, 8)), id="not_global"),
    pytest.param(pool_graph((1, 8, 8, 8), kernel=(8, 8), pad=(0, 1, 0, 1)), id="padded"),
])
def test_other_pools_are_left_alone(graph):
    assert rewritten(graph).op_counts() == {"AVG_POOL2D": 1}


@pytest.mark.needs_vela
def test_the_sums_run_on_the_u55_in_fewer_cycles(tmp_path):
    graph = pool_graph((1, 8, 8, 64))
    serialize.write(graph, tmp_path / "pool.tosa")
    serialize.write(rewritten(graph), tmp_path / "sums.tosa")
    pool = run_vela(tmp_path / "pool.tosa", "ethos-u55-128", tmp_path / "vela_pool")
    sums = run_vela(tmp_path / "sums.tosa", "ethos-u55-128", tmp_path / "vela_sums")
    assert sums["cpu_operators"] == 0
    assert sums["cycles_npu"] < pool["cycles_npu"]
