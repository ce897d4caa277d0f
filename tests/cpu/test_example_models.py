"""Every example model's INT graph (int8 and a16w8) run whole by the CPU kernels on the host
(ASan/UBSan build), bit-exact with the TOSA reference model on the same inputs."""

from __future__ import annotations

import time

import pytest

from models.add import AddModel
from models.cnn import SmallCNN
from pipeline.cpu.graph_format import write_cpu_graph
from tests.cpu.cpu_helpers import assert_bit_exact, build_tool, compare, random
from models.cases.networks import NETWORKS, network
from tests.tosa.lowering_cases import A16W8, INT8, lower_case

pytestmark = [pytest.mark.slow, pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

MODELS = {"add": AddModel, "cnn": SmallCNN, **{name: name for name in NETWORKS}}


@pytest.fixture(scope="module")
def tool(request):
    return build_tool(request)


@pytest.mark.parametrize("dtype", [INT8, A16W8])
@pytest.mark.parametrize("name", list(MODELS))
def test_example_model_runs_bit_exact(name, dtype, tool, tmp_path):
    cls = MODELS[name] if not isinstance(MODELS[name], str) else network(name)
    model = cls()
    case = lower_case(model, model.example_shapes, tmp_path, dtype, where=f"{name}/lower")
    info = write_cpu_graph(case.tosa, tmp_path / "model.tcg")
    # The plan shares bytes between tensors whose lifetimes do not overlap.
    assert 0 < info.arena_bytes <= info.tensor_bytes
    values = {t.name: random(t.shape, t.dtype, seed=i) for i, t in enumerate(info.inputs)}
    start = time.perf_counter()
    results = compare(tool, case.tosa, values)
    assert_bit_exact(results)
    assert time.perf_counter() - start < 120
