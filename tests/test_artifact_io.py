"""The artifact framing's IO metadata (pipeline/artifact.py): the bare-metal runners' static
IO staging buffer is sized from it (issue 28 #14)."""

from __future__ import annotations

import pytest

from pipeline.artifact import block, io_meta, io_staging_bytes


def _io(inputs, outputs):
    def entry(name, dtype, shape):
        return {"name": name, "dtype": dtype, "shape": shape, "scale": 0.1, "zero_point": 0}
    return {"inputs": [entry(*e) for e in inputs], "outputs": [entry(*e) for e in outputs]}


@pytest.mark.parametrize("inputs, outputs, runner, expected", [
    # CPU runner: per tensor itself + its float32 values (--float-io), each 16-aligned
    ([("x", "int8", [1, 3, 512, 512])], [("y", "int8", [1, 4, 512, 512])], "cpu",
     786432 + 4 * 786432 + 1048576 + 4 * 1048576),
    ([("ids", "int32", [1, 7])], [("logits", "int16", [1, 3])], "cpu", 32 + 32 + 16 + 16),
    ([("flag", "bool", [1])], [("f", "float32", [2, 5])], "cpu", 16 + 16 + 48 + 48),
    # NPU runner: the tensor twice (the NPU's, the reference copy)
    ([("x", "int8", [1, 3, 512, 512])], [("y", "int8", [1, 4, 512, 512])], "npu",
     2 * 786432 + 2 * 1048576),
    ([("ids", "int32", [1, 7])], [("logits", "int16", [1, 3])], "npu", 32 + 32 + 16 + 16),
], ids=["cpu-segmentation-1MB-output", "cpu-odd-sizes-aligned", "cpu-bool-and-float",
        "npu-segmentation", "npu-odd-sizes"])
def test_io_staging_bytes_fit_every_input_and_output(inputs, outputs, runner, expected):
    data = block("cpu_graph", b"\0" * 40) + block("io_meta", io_meta(_io(inputs, outputs)))
    assert io_staging_bytes(data + block("cpu_end_stream", b""), runner) == expected


def test_an_artifact_without_io_metadata_is_named():
    with pytest.raises(ValueError, match="the artifact must hold an io_meta block; got none"):
        io_staging_bytes(block("cpu_graph", b"\0" * 40), "cpu")
