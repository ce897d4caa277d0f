"""replace_gather (Ethos-U55/U65 variant): the one-hot CONV2D / MATMUL gives GATHER's integers
bit for bit in the TOSA reference model (random ids and the table's first and last rows), and
Vela places the rewritten graph on Ethos-U55 (cycles printed with -s)."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from pipeline.programs import load_program
from pipeline.tosa import serialize
from pipeline.tosa.lowering import lower_program
from pipeline.tosa.passes import replace_gather_pass
from pipeline.verify.reference_model import run_reference_model
from pipeline.tosa.spec import parse_spec
from tests.tosa.lowering_cases import A16W8, Fn, INT8, SPECS, integers, lower_case, run_vela

pytestmark = [pytest.mark.needs_torch]
T = 16
INT16 = "TOSA-1.0+INT+int16"  # the one-hot's differences by a 1x1 CONV2D of int16 ids


def lowered(module, shapes, folder, spec, dtype=INT8):
    """The common graph of ``module`` and a copy after the pass."""
    case = lower_case(module, shapes, folder, dtype, spec=spec)
    program = load_program(case.path(case.path("program").read_text()))
    graph = lower_program(program, parse_spec(spec)).graph
    after = copy.deepcopy(graph)
    replace_gather_pass.run(after)
    return graph, after


def _feeds(graph, rng, ranges: list[int], edge: int | None):
    feeds, ranges = {}, iter(ranges)
    for name in graph.inputs:
        tensor = graph.tensors[name]
        if tensor.dtype == "int32":  # ids: in range of the table they index
            high = next(ranges)
            ids = rng.integers(0, high, tensor.shape) if edge is None else np.full(
                tensor.shape, edge % high)
            ids.reshape(-1)[:2] = [0, high - 1]
            feeds[name] = ids.astype(np.int32)
        else:
            info = np.iinfo(tensor.dtype)
            feeds[name] = rng.integers(info.min, info.max + 1, tensor.shape).astype(tensor.dtype)
    return feeds


# name -> (module, input specs, the id range of each int32 input)
CASES = {
    "embedding_1000x64": (
        Fn(lambda m, ids: m[0](ids), nn.Embedding(1000, 64)), [integers((1, 32), 1000)], [1000]),
    "token_and_position": (
        Fn(lambda m, ids: m[0](ids) + m[1](torch.arange(ids.shape[1])), nn.Embedding(100, 32),
           nn.Embedding(T, 32)),
        [integers((1, T), 100)], [100]),
    "gather_tokens_runtime_values": (
        Fn(lambda m, x, i: x.gather(1, i[..., None].expand(-1, -1, 32))),
        [(1, T, 32), integers((1, 4), T)], [T]),
    "index_select_rows": (Fn(lambda m, x, i: x.index_select(1, i)), [(1, T, 32), integers((6,), T)],
                          [T]),
    "constant_rows_of_runtime_values": (
        Fn(lambda m, x: x[:, torch.tensor([3, 0, 3, 7])] * 2), [(1, 8, 16)], []),
}  # fmt: skip


# int16 tables: two int8 CONV2Ds; int16 values computed at run time: split at run time into
# two int8 MATMULs; constant rows of values computed at run time: the one-hot is the weights
# of a CONV2D over the values (int16 too), or SLICEs + CONCAT of the rows' runs.


@pytest.mark.needs_tosa_ref
@pytest.mark.parametrize(
    "spec, dtype",
    [(INT16, INT8), (SPECS[INT8], INT8), (INT16, A16W8)],
    ids=["ids_by_conv", "ids_by_sub", "a16w8"],
)
@pytest.mark.parametrize("name", list(CASES))
def test_one_hot_product_gives_the_gather_integers_bit_for_bit(name, spec, dtype, tmp_path):
    module, shapes, ranges = CASES[name]
    graph, after = lowered(module, shapes, tmp_path / "case", spec, dtype)
    assert "GATHER" in graph.op_counts()
    assert "GATHER" not in after.op_counts()
    assert after.outputs == graph.outputs
    serialize.write(graph, tmp_path / "gather.tosa")
    serialize.write(after, tmp_path / "one_hot.tosa")
    rng = np.random.default_rng(0)
    for edge in (None, None, 0, -1):  # random ids twice, then all-first and all-last rows
        feeds = _feeds(graph, rng, ranges, edge)
        want = run_reference_model(tmp_path / "gather.tosa", feeds, graph.outputs, where="gather")
        got = run_reference_model(tmp_path / "one_hot.tosa", feeds, graph.outputs, where="one_hot")
        for y in graph.outputs:
            np.testing.assert_array_equal(got[y], want[y])


@pytest.mark.needs_vela
@pytest.mark.parametrize(
    "name, dtype",
    [("embedding_1000x64", INT8), ("gather_tokens_runtime_values", INT8),
     ("embedding_1000x64", A16W8), ("gather_tokens_runtime_values", A16W8)],
)  # fmt: skip
def test_ethos_u55_places_the_one_hot_form(name, dtype, tmp_path):
    module, shapes, _ = CASES[name]
    case = lower_case(module, shapes, tmp_path / "case", dtype, spec=INT16)
    assert "GATHER" not in [o.op for o in load_ops(case.variant("u55"))]
    u55 = run_vela(case.variant("u55"), "ethos-u55-128", tmp_path / "u55")
    u85 = run_vela(case.variant("u85"), "ethos-u85-256", tmp_path / "u85")
    print(name, dtype, "ethos-u55-128 one-hot", u55["cycles_npu"], "ethos-u85-256 GATHER",
          u85["cycles_total"])


def load_ops(path):
    from pipeline.ethosu.placement import read_operators

    return read_operators(path)


@pytest.mark.needs_tosa_ref
@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize(
    "name, fn, shape, form",
    [("scattered_rows", lambda m, x: x[:, torch.tensor([5, 0, 7, 2, 2])], (2, 8, 16), "CONV2D"),
     ("elements", lambda m, x: x[..., torch.tensor([3, 0, 1])], (4, 6), "CONV2D"),
     ("roll_of_wide_rows", lambda m, x: torch.roll(x, 100, 1), (1, 257, 64), "CONCAT")],
)  # fmt: skip
def test_constant_rows_by_weights_or_runs(name, fn, shape, form, dtype, tmp_path):
    """A GATHER at constant rows (forced in the common graph): the variant's one-hot CONV2D or
    SLICEs + CONCAT give its integers bit for bit."""
    from pipeline.tosa.emit import movement

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(movement, "pieces_cheaper", lambda *args: False)  # always a GATHER
        patch.setattr(movement, "MAX_ONE_HOT", 0)
        graph, after = lowered(Fn(fn), [shape], tmp_path / "case", INT16, dtype)
    assert "GATHER" in graph.op_counts() and "GATHER" not in after.op_counts()
    assert form in after.op_counts()
    serialize.write(graph, tmp_path / "gather.tosa")
    serialize.write(after, tmp_path / "replaced.tosa")
    feeds = _feeds(graph, np.random.default_rng(0), [], None)
    want = run_reference_model(tmp_path / "gather.tosa", feeds, graph.outputs, where="gather")
    got = run_reference_model(tmp_path / "replaced.tosa", feeds, graph.outputs, where="replaced")
    for y in graph.outputs:
        np.testing.assert_array_equal(got[y], want[y])
