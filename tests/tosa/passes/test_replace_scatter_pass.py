"""replace_scatter (Ethos-U55/U65 variant): a SCATTER at constant rows becomes a GATHER of the
rows and values concatenated (then replace_gather's one-hot CONV2D) or SLICEs + CONCAT:
the SCATTER's integers bit for bit in the TOSA reference model; run-time rows stay."""

import copy

import numpy as np
import pytest
import torch

from pipeline.programs import load_program
from pipeline.tosa import serialize
from pipeline.tosa.lowering import lower_program
from pipeline.tosa.passes import replace_gather_pass, replace_scatter_pass
from pipeline.verify.reference_model import run_reference_model
from pipeline.tosa.spec import parse_spec
from tests.tosa.lowering_cases import A16W8, INT8, Fn, lower_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]
SPEC = "TOSA-1.0+INT+int16"


def every_other(m, x, v):
    x = x.clone()
    x[torch.arange(0, 36, 2)] = v
    return x


def two_rows(m, x, v):
    x = x.clone()
    x[:, torch.tensor([3, 1])] = v
    return x


def lowered(fn, shapes, folder, dtype):
    case = lower_case(Fn(fn), shapes, folder, dtype, spec=SPEC)
    program = load_program(case.path(case.path("program").read_text()))
    graph = lower_program(program, parse_spec(SPEC)).graph
    after = copy.deepcopy(graph)
    replace_scatter_pass.run(after)
    replace_gather_pass.run(after)
    return graph, after


@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize(
    "fn, shapes",
    [pytest.param(every_other, [(36, 5), (18, 5)], id="many_runs"),
     pytest.param(two_rows, [(2, 6, 3), (2, 2, 3)], id="two_rows_batched")],
)  # fmt: skip
def test_constant_scatter_gives_the_same_integers(fn, shapes, dtype, tmp_path):
    graph, after = lowered(fn, shapes, tmp_path / "case", dtype)
    assert "SCATTER" in graph.op_counts()
    assert not {"SCATTER", "GATHER"} & set(after.op_counts())
    serialize.write(graph, tmp_path / "scatter.tosa")
    serialize.write(after, tmp_path / "replaced.tosa")
    rng = np.random.default_rng(0)
    for _ in range(2):
        feeds = {}
        for name in graph.inputs:
            info = np.iinfo(graph.tensors[name].dtype)
            shape = graph.tensors[name].shape
            feeds[name] = rng.integers(info.min, info.max + 1, shape).astype(info.dtype)
        want = run_reference_model(tmp_path / "scatter.tosa", feeds, graph.outputs, where="s")
        got = run_reference_model(tmp_path / "replaced.tosa", feeds, graph.outputs, where="r")
        for y in graph.outputs:
            np.testing.assert_array_equal(got[y], want[y])


def test_run_time_rows_stay_a_scatter(tmp_path):
    fn = lambda m, x, i, v: x.index_put((i,), v)  # noqa: E731
    shapes = [(5, 3), lambda g: torch.randperm(5, generator=g)[:2], (2, 3)]
    _, after = lowered(fn, shapes, tmp_path / "case", INT8)
    assert "SCATTER" in after.op_counts()
