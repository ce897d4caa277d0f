import numpy as np
import pytest
from torch import nn

from pipeline.tosa.flatbuffer import read_block, with_outputs
from pipeline.verify.reference_model import run_reference_model
from tests.tosa.lowering_cases import lower_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(64, 5))
    return lower_case(module, [(1, 3, 6, 6)], tmp_path_factory.mktemp("flatbuffer"))


def test_read_block(case):
    block = read_block(case.tosa)
    assert block.inputs == ["input"] and block.outputs == ["linear"]
    ops = [op.op for op in block.operators if not op.op.startswith("CONST")]
    assert ops[:2] == ["CONV2D", "RESCALE"]
    rescale = next(op for op in block.operators if op.op == "RESCALE")
    assert rescale.attrs == {"rounding_mode": "SINGLE_ROUND", "scale32": True, "per_channel": True,
                             "input_unsigned": False, "output_unsigned": False}
    assert rescale.attrs["rounding_mode"].code == 1  # tosa.RoundingMode.SINGLE_ROUND
    assert rescale.location.startswith("conv2d")
    weights = block.tensors["conv2d_weight"]
    assert (weights.dtype, weights.shape, weights.data.dtype) == ("int8", (4, 3, 3, 3), np.int64)
    shape = next(t for t in block.tensors.values() if t.dtype == "shape")
    assert shape.data is not None and shape.data.shape == shape.shape
    assert block.tensors["conv2d"].data is None


def test_with_outputs_makes_the_reference_model_write_intermediates(case, tmp_path):
    debug = tmp_path / "debug.tosa"
    debug.write_bytes(with_outputs(case.tosa, ["conv2d", "linear"]))
    assert read_block(debug).outputs == ["linear", "conv2d"]
    feed = {"input": np.random.default_rng(0).integers(-128, 128, (1, 6, 6, 3), dtype=np.int8)}
    got = run_reference_model(debug, feed, ["linear", "conv2d"])
    plain = run_reference_model(case.tosa, feed, ["linear"])
    assert got["conv2d"].shape == (1, 4, 4, 4) and got["conv2d"].dtype == np.int8
    np.testing.assert_array_equal(got["linear"], plain["linear"])


def test_every_attribute_is_read_by_its_schema_name(case):
    """The attribute tables are read by reflection over the ``tosa`` classes: every field,
    vectors as lists of ints, enums by their member's name (with its number)."""
    block = read_block(case.tosa, data=False)
    conv = next(op for op in block.operators if op.op == "CONV2D")
    assert conv.attrs == {"pad": [0, 0, 0, 0], "stride": [1, 1], "dilation": [1, 1],
                          "local_bound": False, "acc_type": "INT32"}
    assert conv.attrs["acc_type"].code == 5  # tosa.DType.INT32
    assert block.tensors["conv2d_weight"].data is None  # data=False: no constant decoded


def test_resolved_operators_carry_their_tensors_and_producers(case):
    block = read_block(case.tosa)
    resolved = block.resolved()
    assert [op.op for op in resolved][:2] == ["CONV2D", "RESCALE"]
    conv, rescale = resolved[:2]
    assert conv.inputs[0].name == "input" and conv.inputs[0].dtype == "int8"
    assert conv.producers[0] is None  # a graph input
    assert rescale.producers[0] is conv and rescale.inputs[0].dtype == "int32"


def _garbled(data: bytes, seed: int) -> bytes:
    """``data`` with 8 bytes past its frame replaced at random (``seed``)."""
    import random

    rng = random.Random(seed)
    garbled = bytearray(data)
    for _ in range(8):
        garbled[rng.randrange(100, len(garbled))] = rng.randrange(256)
    return bytes(garbled)


def test_the_frame_check_passes_real_files_and_refuses_garbage(case, tmp_path):
    from pipeline.tosa.header import tosa_problem

    assert tosa_problem(case.tosa) is None
    bad = tmp_path / "model.u85.tosa"
    for data, why in ((b"garbage" * 50, "no TOSA flatbuffer identifier"),
                      (case.tosa.read_bytes()[:40], "outside the file"), (b"", "identifier")):
        bad.write_bytes(data)
        assert why in tosa_problem(bad)


def test_every_reader_names_an_unreadable_file_in_one_line(case, tmp_path):
    """Garbage that passes the frame check (a forged store entry) fails the reader with
    ``UnreadableInput`` naming the file, never a traceback from the generated accessors."""
    from pipeline.errors import UnreadableInput
    from pipeline.tosa.flatbuffer import operator_names, version
    from pipeline.tosa.header import tosa_problem

    bad = tmp_path / "model.u55.tosa"
    deep = 0  # garbled files that pass the frame check and still fail a reader
    for seed in range(40):
        bad.write_bytes(_garbled(case.tosa.read_bytes(), seed))
        framed = tosa_problem(bad) is None
        for read in (read_block, operator_names, version, lambda p: with_outputs(p, ["x"])):
            try:
                read(bad)
            except UnreadableInput as error:
                assert str(error).startswith(f"{bad}: must be a TOSA flatbuffer; got ")
                assert "\n" not in str(error)
                deep += framed
    assert deep, "no garbled file got past the frame check: the test lost its point"
