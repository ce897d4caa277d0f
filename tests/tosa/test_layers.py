"""The layer map lower records in io.json (``pipeline/tosa/layers.py``)."""

import pytest
import torch
from torch import nn

from pipeline.programs import load_program
from tests.tosa.lowering_cases import FP, lower_case

pytestmark = pytest.mark.needs_torch


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc1, self.fc2 = nn.Linear(64, 16), nn.Linear(16, 5)

    def forward(self, x):
        x = torch.flatten(torch.relu(self.conv(x)), 1)
        return torch.sigmoid(self.fc2(torch.relu(self.fc1(x))))


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return lower_case(Mixed(), [(1, 3, 6, 6)], tmp_path_factory.mktemp("layers"))


def _quantized_inputs(case) -> dict[str, str]:
    """quantize node -> the node it quantizes, in the program lower and verify load."""
    program = load_program(case.path("quantized.pt2"))
    return {n.name: n.args[0].name for n in program.graph_module.graph.nodes
            if str(n.target) == "quantized_decomposed.quantize_per_tensor.default"}  # fmt: skip


def test_every_entry_names_a_quantize_node_and_a_graph_tensor(case):
    quantized = _quantized_inputs(case)
    layers = case.io()["layers"]
    assert all(entry["node"] in quantized for entry in layers)
    by_value = {quantized[entry["node"]]: entry for entry in layers}
    assert by_value["x"]["tensor"] == "x" and by_value["x"]["dim_order"] == [0, 2, 3, 1]
    # relu fused into the conv's RESCALE: the conv's tensor holds the relu's value
    assert by_value["relu"]["tensor"] == "conv2d" and by_value["relu"]["shape"] == [1, 4, 4, 4]
    assert by_value["sigmoid"]["tensor"] == "sigmoid"


def test_a_value_whose_tensor_a_pass_removed_is_found_where_it_was_reshaped(case):
    from pipeline.tosa.flatbuffer import read_block

    tensors = read_block(case.tosa).tensors
    by_value = {_quantized_inputs(case)[e["node"]]: e for e in case.io()["layers"]}
    fc1 = by_value["relu_1"]  # linear + relu, its [1, 16] tensor merged into the next reshape
    assert fc1["shape"] == [1, 16] and fc1["dim_order"] == [0, 1]
    assert tensors[fc1["tensor"]].shape == (1, 1, 1, 16)


def test_a_float_graph_has_no_layers(tmp_path):
    case = lower_case(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()), [(1, 3, 6, 6)], tmp_path, FP)
    assert "layers" not in case.io()
