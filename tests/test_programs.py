"""pipeline/programs.py saves and loads ExportedPrograms faster than torch.export.save/load
do by themselves (it skips the serialiser's discarded self-test copy and memoizes the schema's
type hints); the files and the programs must be exactly torch's own."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pipeline.programs import load_program, save_program

pytestmark = [pytest.mark.needs_torch, pytest.mark.quick]


class _Block(nn.Module):
    """What users write: in-place activations, `x += y`, dropout, BatchNorm, a mask."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.point = nn.Conv2d(8, 8, 1)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, mask):
        y = self.norm(self.conv(x))
        y.relu_()
        z = self.point(y)
        z += y
        z = z.masked_fill(mask == 0, 0.0)
        return self.drop(nn.functional.relu6(z, inplace=True))


@pytest.fixture(scope="module")
def program():
    model = _Block().eval()
    example = (torch.randn(1, 3, 8, 8), torch.randint(0, 2, (1, 1, 8, 8), dtype=torch.int64))
    return torch.export.export(model, example)


def _saved_by_torch(program, path):
    for module in program.graph_module.modules():  # what save_program drops first
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                node.meta.pop("from_node", None)
    torch.export.save(program, path)


def test_saved_file_is_torchs_own_byte_for_byte(program, tmp_path):
    (tmp_path / "ours").mkdir()
    (tmp_path / "torch").mkdir()
    save_program(program, tmp_path / "ours" / "model.pt2")
    _saved_by_torch(program, tmp_path / "torch" / "model.pt2")
    assert (tmp_path / "ours" / "model.pt2").read_bytes() == \
        (tmp_path / "torch" / "model.pt2").read_bytes()


def test_save_leaves_torchs_self_test_in_place(program, tmp_path):
    from torch._export.serde import serialize

    before = serialize.canonicalize
    save_program(program, tmp_path / "model.pt2")
    assert serialize.canonicalize is before


def test_loaded_program_is_torchs_own(program, tmp_path):
    path = tmp_path / "model.pt2"
    save_program(program, path)
    ours, theirs = load_program(path), torch.export.load(path)
    assert str(ours.graph) == str(theirs.graph)
    assert str(ours.graph_signature) == str(theirs.graph_signature)
    assert [n.meta.get("stack_trace") for n in ours.graph.nodes] == \
        [n.meta.get("stack_trace") for n in theirs.graph.nodes]
    assert ours.state_dict.keys() == theirs.state_dict.keys()
    assert all(torch.equal(ours.state_dict[k], theirs.state_dict[k]) for k in ours.state_dict)
    sample = (torch.randn(1, 3, 8, 8), torch.ones(1, 1, 8, 8, dtype=torch.int64))
    assert torch.equal(ours.module()(*sample), theirs.module()(*sample))
    (tmp_path / "again").mkdir()
    save_program(ours, tmp_path / "again" / "model.pt2")
    assert (tmp_path / "again" / "model.pt2").read_bytes() == path.read_bytes()


def test_composite_operators_registered_later_are_still_collected():
    """memoize_cia_materialization: torch's collection of composite (CIA) operators, which
    run_decompositions keeps, is redone when a new one is registered after the first run."""
    from torch._export import utils

    from pipeline.programs import memoize_cia_materialization

    memoize_cia_materialization()
    before = utils._collect_all_valid_cia_ops()
    library = torch.library.Library("pipeline_test_cia", "DEF")  # noqa: TOR901
    library.define("scaled(Tensor x) -> Tensor")
    library.impl("scaled", lambda x: x * 2, "CompositeImplicitAutograd")
    after = utils._collect_all_valid_cia_ops()
    assert torch.ops.pipeline_test_cia.scaled.default in after
    assert before <= after
