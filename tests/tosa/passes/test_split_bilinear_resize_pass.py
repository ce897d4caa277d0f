"""split_bilinear_resize (Ethos-U55/U65 variant): the identity it rests on, op list, bit-exact
integers against the RESIZE BILINEAR it replaces (TOSA reference model), and the RESIZEs it
leaves alone. Vela placement: tests/tosa/ops/test_op_upsample_bilinear.py."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from pipeline.programs import load_program
from pipeline.tosa import serialize
from pipeline.tosa.lowering import lower_program
from pipeline.tosa.passes import split_bilinear_resize_pass
from pipeline.tosa.passes.split_bilinear_resize_pass import axis_filter
from pipeline.verify.reference_model import run_reference_model
from pipeline.tosa.spec import parse_spec
from tests.tosa.lowering_cases import A16W8, FP, INT8, SPECS, lower_case

pytestmark = [pytest.mark.needs_torch]

# What the pass adds around the RESIZE it turns into a NEAREST one (the RESCALE stays).
ADDED_OPS = {"SLICE": 5, "CONCAT": 2, "DEPTHWISE_CONV2D": 1}


def bilinear(scale_factor=None, size=None):
    return nn.Upsample(size, scale_factor, mode="bilinear", align_corners=False)


def lowered(module, shape, folder, dtype):
    """The common graph of ``module`` and a copy after the pass."""
    case = lower_case(module, [shape], folder, dtype)
    program = load_program(case.path(case.path("program").read_text()))
    graph = lower_program(program, parse_spec(SPECS[dtype])).graph
    after = copy.deepcopy(graph)
    split_bilinear_resize_pass.run(after)
    return graph, after


@pytest.mark.parametrize("factors", [(2, 2), (4, 4), (8, 8), (2, 4), (8, 2)])
def test_nearest_then_filter_is_torch_bilinear(factors):
    """In float64: nearest upsample, replicate k/2 edge rows, filter with axis_filter(k) / 2k
    per axis == torch's half-pixel bilinear upsample, borders included."""
    x = torch.randint(-128, 128, (1, 3, 5, 4), generator=torch.Generator().manual_seed(0))
    x = x.double()
    (ky, kx), channels = factors, x.shape[1]
    expected = F.interpolate(x, scale_factor=factors, mode="bilinear", align_corners=False)
    nearest = F.interpolate(x, scale_factor=factors, mode="nearest")
    padded = F.pad(nearest, (kx // 2, kx // 2, ky // 2, ky // 2), mode="replicate")
    taps = torch.outer(*(torch.tensor(axis_filter(k), dtype=torch.float64) for k in factors))
    weight = (taps / taps.sum()).expand(channels, 1, ky + 1, kx + 1)
    torch.testing.assert_close(F.conv2d(padded, weight, groups=channels), expected,
                               rtol=0, atol=1e-9)  # fmt: skip


CASES = [
    pytest.param(bilinear(2), (1, 4, 5, 6), id="x2"),
    pytest.param(bilinear(4), (1, 3, 4, 7), id="x4_non_square"),
    pytest.param(bilinear(8), (1, 2, 3, 2), id="x8"),
    pytest.param(bilinear((2, 4)), (1, 3, 3, 5), id="x2_x4"),
    pytest.param(bilinear(2), (1, 8, 1, 1), id="x2_from_1x1"),
    pytest.param(
        nn.Sequential(nn.Conv2d(3, 4, 1), nn.ReLU(), bilinear(2)),
        (1, 3, 4, 5),
        id="x2_after_relu_zero_point_far_from_0",
    ),
]


@pytest.mark.needs_tosa_ref
@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize("module, shape", CASES)
def test_filter_form_gives_the_resize_integers_bit_for_bit(module, shape, dtype, tmp_path):
    graph, after = lowered(module, shape, tmp_path / "case", dtype)
    counts = graph.op_counts()
    assert after.op_counts() == {k: counts.get(k, 0) + ADDED_OPS.get(k, 0) for k in
                                 {*counts, *ADDED_OPS}}  # fmt: skip
    assert [o.attrs["mode"] for o in graph.operators if o.op == "RESIZE"] == ["BILINEAR"]
    assert [o.attrs["mode"] for o in after.operators if o.op == "RESIZE"] == ["NEAREST"]
    assert after.outputs == graph.outputs  # consumers keep reading the same tensor
    serialize.write(graph, tmp_path / "resize.tosa")
    serialize.write(after, tmp_path / "filter.tosa")
    x, y = graph.inputs[0], graph.outputs[0]
    dtype_np = np.int8 if graph.tensors[x].dtype == "int8" else np.int16
    info = np.iinfo(dtype_np)
    rng = np.random.default_rng(0)
    for low, high in ((info.min, info.max + 1), (-3, 4)):  # full range; small: many ties
        feeds = {x: rng.integers(low, high, graph.tensors[x].shape).astype(dtype_np)}
        want = run_reference_model(tmp_path / "resize.tosa", feeds, [y], where="resize")[y]
        got = run_reference_model(tmp_path / "filter.tosa", feeds, [y], where="filter")[y]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "module, shape, dtype",
    [
        pytest.param(bilinear(3), (1, 2, 3, 4), INT8, id="x3_not_a_u55_factor"),
        pytest.param(bilinear(size=(10, 6)), (1, 2, 5, 6), INT8, id="rows_only"),
        pytest.param(nn.Upsample(scale_factor=2), (1, 2, 3, 4), INT8, id="nearest"),
        pytest.param(bilinear(2), (1, 2, 3, 4), FP, id="float"),
    ],
)
def test_other_resizes_are_left_alone(module, shape, dtype, tmp_path):
    graph, after = lowered(module, shape, tmp_path / "case", dtype)
    assert [o.op for o in after.operators] == [o.op for o in graph.operators]
