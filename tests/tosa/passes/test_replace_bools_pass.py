"""replace_bools (Ethos-U55/U65 variant): masks, comparisons, logical operators and where as
int32 0/1 arithmetic give the common graph's integers bit for bit in the TOSA reference model
(random inputs, ties and extremes, all-0 and all-1 masks), no bool tensor is left, and Vela
places the rewritten graph on Ethos-U55."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from pipeline.programs import load_program
from pipeline.tosa import serialize
from pipeline.tosa.lowering import lower_program
from pipeline.ethosu.placement import read_operators, violations
from pipeline.tosa.passes import replace_bools_pass
from pipeline.verify.reference_model import run_reference_model
from pipeline.tosa.spec import parse_spec
from tests.tosa.lowering_cases import INT8, SPECS, booleans, integers, lower_case, run_vela

pytestmark = [pytest.mark.needs_torch]
T = 16
SCORES = ((1, 2, T, T), 4.0)
MASK = booleans((1, T), dtype=torch.int64)  # an int64 attention mask


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _eager(scores, mask):
    bias = torch.where(mask.bool()[:, None, None, :], 0.0, torch.finfo(torch.float32).min)
    return torch.softmax(scores + bias, -1)


def _logic(x, y):
    keep = ((x >= 0.25) ^ (x < -0.5)) | ~(y > 0.1)
    return torch.where(keep, x, -1e9) + torch.where(x == y, 0.5, x)


# name -> (module, input specs, the range [0, high) of each int32 input)
CASES = {
    "masked_fill_softmax": (
        Fn(lambda s, k: s.masked_fill(k[:, None, None, :] == 0, -1e9).softmax(-1)),
        [SCORES, MASK], [2]),
    "hf_eager_mask": (Fn(_eager), [SCORES, MASK], [2]),
    "ids_mask_as_float": (Fn(lambda x, ids: x * ((ids != 0) & (ids < 50)).float()),
                          [(1, T), integers((1, T), 100)], [100]),
    "where_greater_tensors": (Fn(lambda x, y: torch.where(x > y, x, y)), [(1, 8, T), (1, 8, T)],
                              []),
    "where_at_most_tensors": (Fn(lambda x, y: torch.where(x <= y, y, x)), [(1, 8, T), (1, 8, T)],
                              []),
    "logical_and_fills": (Fn(_logic), [(1, 8, T), (1, 8, T)], []),
    "ids_compared_with_numbers": (
        Fn(lambda x, ids: x * (ids > 2.5).float() + x * (ids <= 7).float() - (ids >= 0).float()),
        [(1, T), integers((1, T), 10)], [10]),
    "ids_equal_and_outside_int32": (
        Fn(lambda x, ids: x * (ids == 5).float() + x * (ids > 1e10).float()
           - (ids >= -1e10).float()),
        [(1, T), integers((1, T), 10)], [10]),
}  # fmt: skip


def lowered(module, shapes, folder):
    case = lower_case(module, shapes, folder, INT8)
    program = load_program(case.path(case.path("program").read_text()))
    graph = lower_program(program, parse_spec(SPECS[INT8])).graph
    after = copy.deepcopy(graph)
    replace_bools_pass.run(after)
    return case, graph, after


def _feeds(graph, rng, ranges, edge):
    """Random inputs, or an edge: 'low'/'high' (every element at its extreme), 'ties'
    (int8 in -2..2, so values compare equal often)."""
    feeds, ranges = {}, iter(ranges)
    for name in graph.inputs:
        tensor = graph.tensors[name]
        low, high = (0, next(ranges)) if tensor.dtype == "int32" else (-128, 128)
        if edge == "ties" and tensor.dtype != "int32":
            low, high = -2, 3
        values = rng.integers(low, high, tensor.shape)
        if edge in ("low", "high"):
            values = np.full(tensor.shape, low if edge == "low" else high - 1)
        feeds[name] = values.astype(np.int32 if tensor.dtype == "int32" else np.int8)
    return feeds


@pytest.mark.needs_tosa_ref
@pytest.mark.parametrize("name", list(CASES))
def test_int_masks_give_the_bool_graph_integers_bit_for_bit(name, tmp_path):
    module, shapes, ranges = CASES[name]
    _, graph, after = lowered(module, shapes, tmp_path / "case")
    assert any(t.dtype == "bool" for t in graph.tensors.values())
    assert not any(t.dtype == "bool" for t in after.tensors.values())
    assert not {"EQUAL", "GREATER", "GREATER_EQUAL", "SELECT", "LOGICAL_AND"} & set(
        after.op_counts())
    serialize.write(graph, tmp_path / "bool.tosa")
    serialize.write(after, tmp_path / "int.tosa")
    rng = np.random.default_rng(0)
    for edge in (None, None, "ties", "low", "high"):
        feeds = _feeds(graph, rng, ranges, edge)
        want = run_reference_model(tmp_path / "bool.tosa", feeds, graph.outputs, where="bool")
        got = run_reference_model(tmp_path / "int.tosa", feeds, graph.outputs, where="int")
        for y in graph.outputs:
            np.testing.assert_array_equal(got[y], want[y], err_msg=f"{edge} inputs")


def test_graphs_with_bool_inputs_are_left_alone(tmp_path):
    module = Fn(lambda k: k[:, None, :].expand(1, T, T))
    _, graph, after = lowered(module, [booleans((1, T))], tmp_path / "case")
    assert [o.op for o in after.operators] == [o.op for o in graph.operators]


@pytest.mark.needs_vela
@pytest.mark.parametrize("name", list(CASES))
def test_ethos_u55_places_the_int_masks(name, tmp_path):
    module, shapes, _ = CASES[name]
    case = lower_case(module, shapes, tmp_path / "case", INT8)
    assert list(violations(read_operators(case.variant("u55")), "ethos-u55-128")) == []
    u55 = run_vela(case.variant("u55"), "ethos-u55-128", tmp_path / "u55")
    u85 = run_vela(case.variant("u85"), "ethos-u85-256", tmp_path / "u85")
    print(name, "ethos-u55-128 int masks", u55["cycles_npu"], "ethos-u85-256 bools",
          u85["cycles_npu"])
