"""Splitting a lowered graph into NPU and CPU segments (npu: {fallback: cpu}): placement by
the NPU's rules, maximal segments, and segment sub-graphs cut out of the flatbuffer that
compute exactly what the whole graph computes (TOSA reference model)."""

import numpy as np
import pytest

from pipeline.errors import UserError
from pipeline.ethosu.mixed import MAX_SEGMENTS, _check_limits
from pipeline.ethosu.split import Segment, place, segments, subgraph
from tests.e2e.mixed_models.scores import Scores

pytestmark = [pytest.mark.needs_torch]


@pytest.fixture(scope="module")
def scores_u55(tmp_path_factory):
    """The a16w8 attention-scores model lowered; its Ethos-U55 variant."""
    from tests.tosa.lowering_cases import A16W8, lower_case

    case = lower_case(Scores(), [(1, 8, 16)], tmp_path_factory.mktemp("scores"), A16W8)
    return case.variant("u55")


def test_u55_places_the_int16_matmul_and_its_int48_rescale_on_the_cpu(scores_u55):
    placed = place(scores_u55, "ethos-u55-128")
    cpu = [p for p in placed if p.runs_on == "cpu"]
    assert [p.op for p in cpu] == ["MATMUL", "RESCALE"]
    assert cpu[0].reason == "must take int8 inputs; got int16, int16"
    assert cpu[0].location.startswith("matmul @ ") and "scores.py:15" in cpu[0].location
    assert cpu[1].reason.startswith("reads int48 tensor ")
    parts = segments(scores_u55, placed)
    assert [(s.runs_on, len(s.ops)) for s in parts] == [("npu", 9), ("cpu", 2), ("npu", 4)]
    # Each border tensor is written by one segment and read by the next.
    assert parts[0].outputs == parts[1].inputs and parts[1].outputs == parts[2].inputs


def test_u85_takes_every_operator(scores_u55):
    parts = segments(scores_u55, place(scores_u55, "ethos-u85-256"))
    assert [s.runs_on for s in parts] == ["npu"]


@pytest.mark.needs_tosa_ref
def test_each_segment_subgraph_computes_what_the_whole_graph_does(scores_u55, tmp_path):
    from pipeline.tosa.flatbuffer import read_block, with_outputs
    from pipeline.verify.reference_model import run_reference_model

    parts = segments(scores_u55, place(scores_u55, "ethos-u55-128"))
    block = read_block(scores_u55)
    rng = np.random.default_rng(0)
    feed = {n: rng.integers(-2000, 2000, block.tensors[n].shape).astype(np.int16)
            for n in block.inputs}
    names = list(dict.fromkeys([*block.outputs, *(n for s in parts for n in s.outputs)]))
    whole = tmp_path / "whole.tosa"
    whole.write_bytes(with_outputs(scores_u55, names))
    values = {**feed, **run_reference_model(whole, feed, names)}
    for k, part in enumerate(parts):
        path = tmp_path / f"segment{k}.tosa"
        path.write_bytes(subgraph(scores_u55, part))
        got = run_reference_model(path, {n: values[n] for n in part.inputs}, list(part.outputs))
        for name in part.outputs:
            assert np.array_equal(got[name], values[name]), (k, name)


def test_a_sequence_longer_than_the_runtime_holds_is_refused():
    parts = [Segment("npu" if k % 2 else "cpu", (), ("a",), ("b",))
             for k in range(MAX_SEGMENTS + 1)]
    with pytest.raises(UserError, match=r"t/mixed: a sequence artifact's segments must be at "
                                        r"most 16 \(the runtime's fixed tables\); got 17"):
        _check_limits(parts, [], "t/mixed")
