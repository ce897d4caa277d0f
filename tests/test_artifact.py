"""The block framing every artifact shares (``pipeline/artifact.py``): the restore check of the
CPU and sequence artifacts (a forged store entry is refused, issue 28 reproduction 11)."""

import json

import pytest

from pipeline.artifact import block, blocks_problem, io_meta, walk_blocks
from pipeline.cpu.artifact import cpu_artifact

IO = {"inputs": [{"name": "x", "dtype": "int8", "shape": [1, 8], "scale": 0.5,
                  "zero_point": -3}],
      "outputs": [{"name": "y", "dtype": "int8", "shape": [1, 4], "scale": 0.25,
                   "zero_point": 0}]}


@pytest.fixture
def io_path(tmp_path):
    path = tmp_path / "io.json"
    path.write_text(json.dumps(IO))
    return path


def test_a_cpu_artifact_passes_and_walks_block_by_block(tmp_path, io_path):
    path = tmp_path / "model.cpu.bin"
    path.write_bytes(cpu_artifact(b"graph bytes", IO))
    assert [name for name, _ in walk_blocks(path.read_bytes())] == ["cpu_graph", "io_meta",
                                                                    "cpu_end_stream"]
    assert blocks_problem(path, "cpu_graph", "cpu_end_stream", io_path) is None


def test_a_sequence_artifact_with_repeated_segments_passes(tmp_path, io_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"".join([block("sequence", b"s"), block("npu_segment", b"a"),
                               block("cpu_segment", b"b"), block("npu_segment", b"c"),
                               block("io_meta", io_meta(IO)), block("sequence_end", b"")]))
    assert blocks_problem(path, "sequence", "sequence_end", io_path) is None


@pytest.mark.parametrize("forged,why", [
    (b"garbage" * 40, "must fit in"),
    (cpu_artifact(b"graph", IO)[:-40], "must fit in"),
    (block("cpu_graph", b"g") + block("cpu_end_stream", b""), "must open with cpu_graph"),
    (cpu_artifact(b"graph", {**IO, "outputs": IO["inputs"]}), "not io.json's"),
    (b"", "blocks none"),
], ids=["garbage", "truncated", "no io_meta", "other io", "empty"])
def test_a_forged_cpu_artifact_is_refused(tmp_path, io_path, forged, why):
    path = tmp_path / "model.cpu.bin"
    path.write_bytes(forged)
    assert why in blocks_problem(path, "cpu_graph", "cpu_end_stream", io_path)
