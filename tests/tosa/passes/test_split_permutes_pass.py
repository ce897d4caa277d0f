import json
from pathlib import Path

import pytest
from torch import nn

from pipeline.tosa.passes import split_permutes_pass
from tests.tosa.lowering_cases import count_targets, graph_before, lower_case, run_case, run_vela

pytestmark = pytest.mark.needs_torch

PERMUTE, SELECT, SLICE = "aten.permute.default", "aten.select.int", "aten.slice.Tensor"


class SplitQKV(nn.Module):
    """models/transformer_block.py's q/k/v split: a rank-5 permute unbound along dim 0."""

    def __init__(self, heads: int = 2, head_dim: int = 4):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.qkv = nn.Linear(heads * head_dim, 3 * heads * head_dim)

    def forward(self, x):
        batch, tokens, _ = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        return (q @ k.transpose(-2, -1)) @ v


class SelectAndSlice(nn.Module):
    """A select and a slice of the same dim of one permute (as ``chunk``-style code does)."""

    def forward(self, x):
        y = x.reshape(1, 6, 3, 4).permute(2, 0, 3, 1)  # (3, 1, 4, 6)
        return y[0] + y[1:]


class SlicesOnly(nn.Module):
    def forward(self, x):
        y = x.reshape(1, 6, 2, 4, 2).permute(0, 3, 1, 4, 2)  # (1, 4, 6, 2, 2)
        return y[:, :2] + y[:, 2:]


class PermuteAlsoReadWhole(nn.Module):
    def forward(self, x):
        y = x.reshape(1, 6, 3, 4).permute(2, 0, 3, 1)  # (3, 1, 4, 6)
        return y[0] + y[1], y


def _fx(module, shapes, tmp_path):
    case = lower_case(module, shapes, tmp_path)
    return graph_before(case.path("quantized.pt2"), "split_permutes")


def _transpose_ranks(tosa: Path) -> list[int]:
    """The input rank of every TRANSPOSE in a lowered flatbuffer."""
    from tosa.Op import Op
    from tosa.TosaGraph import TosaGraph

    block = TosaGraph.GetRootAs(tosa.read_bytes(), 0).Regions(0).Blocks(0)
    ranks = {}
    for i in range(block.TensorsLength()):
        tensor = block.Tensors(i)
        ranks[tensor.Name().decode()] = tensor.ShapeLength()
    operators = [block.Operators(i) for i in range(block.OperatorsLength())]
    return [ranks[op.Inputs(0).decode()] for op in operators if op.Op() == Op.TRANSPOSE]


def test_selects_of_a_permute_become_permutes_of_selects(tmp_path):
    gm, ctx = _fx(SplitQKV(), [(1, 6, 8)], tmp_path)
    assert (count_targets(gm, PERMUTE), count_targets(gm, SELECT)) == (1, 3)
    qparams = next(n for n in gm.graph.nodes if str(n.target) == PERMUTE).meta["qparams"]
    traces = {n.meta.get("stack_trace") for n in gm.graph.nodes if str(n.target) == SELECT}
    split_permutes_pass.run(gm, ctx)
    assert (count_targets(gm, PERMUTE), count_targets(gm, SELECT)) == (3, 3)
    for node in gm.graph.nodes:
        if str(node.target) == SELECT:
            assert node.args[0].meta["val"].dim() == 5 and node.args[1] == 2
            assert tuple(node.meta["val"].shape) == (1, 6, 2, 4)
        if str(node.target) == PERMUTE:
            assert str(node.args[0].target) == SELECT and node.args[1] == [0, 2, 1, 3]
            assert tuple(node.meta["val"].shape) == (1, 2, 6, 4)
        if str(node.target) in (SELECT, PERMUTE):
            assert node.meta["qparams"] == qparams
            assert node.meta.get("stack_trace") in traces


def test_a_slice_beside_a_select_is_split_too(tmp_path):
    gm, ctx = _fx(SelectAndSlice(), [(1, 72)], tmp_path)
    assert [count_targets(gm, t) for t in (PERMUTE, SELECT, SLICE)] == [1, 1, 1]
    split_permutes_pass.run(gm, ctx)
    assert [count_targets(gm, t) for t in (PERMUTE, SELECT, SLICE)] == [2, 1, 1]
    piece = next(n for n in gm.graph.nodes if str(n.target) == SLICE)
    assert piece.args[0].meta["val"].dim() == 4 and piece.args[1:3] == (2, 1)
    assert tuple(piece.meta["val"].shape) == (1, 6, 2, 4)
    assert next(iter(piece.users)).args[1] == [2, 0, 3, 1]


def test_slices_alone_are_left(tmp_path):
    gm, ctx = _fx(SlicesOnly(), [(1, 96)], tmp_path)
    split_permutes_pass.run(gm, ctx)
    assert (count_targets(gm, PERMUTE), count_targets(gm, SLICE)) == (1, 2)


def test_permute_with_another_user_is_kept(tmp_path):
    gm, ctx = _fx(PermuteAlsoReadWhole(), [(1, 72)], tmp_path)
    split_permutes_pass.run(gm, ctx)
    assert (count_targets(gm, PERMUTE), count_targets(gm, SELECT)) == (1, 2)


@pytest.mark.needs_tosa_ref
@pytest.mark.parametrize(
    "module, shape",
    [
        pytest.param(SplitQKV(), (1, 6, 8), id="qkv_unbind"),
        pytest.param(SelectAndSlice(), (1, 72), id="select_and_slice"),
    ],
)
def test_int8_still_matches_torch_exactly(module, shape, tmp_path):
    case, report = run_case(module, [shape], tmp_path)
    assert report["passed"]
    assert all(rank <= 4 for rank in _transpose_ranks(case.tosa))


@pytest.mark.needs_vela
def test_transformer_block_npu_cycles_drop_on_u85(tmp_path, monkeypatch):
    from models.transformer_block import TransformerBlock
    from pipeline.tosa import lowering

    def compile_(folder: Path) -> tuple[Path, int]:
        model = TransformerBlock()
        case = lower_case(model, model.example_shapes, folder)
        figures = run_vela(case.tosa, "ethos-u85-256", folder / "vela")
        return case.tosa, figures["cycles_npu"]

    after_tosa, after = compile_(tmp_path / "after")
    without = tuple(p for p in lowering.FX_PASSES if p.name != "split_permutes")
    monkeypatch.setattr(lowering, "FX_PASSES", without)
    before_tosa, before = compile_(tmp_path / "before")
    print(json.dumps({"u85_npu_cycles_before": before, "u85_npu_cycles_after": after}))
    assert 5 in _transpose_ranks(before_tosa)
    assert max(_transpose_ranks(after_tosa)) <= 4
    assert after < before
