"""The decompositions real models need done in the graph (``pipeline/normalise/local.py``): the
same program as torch's re-trace, node for node and byte for byte once saved, and the re-trace
whenever a write may reach an alias."""

import copy

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import pipeline.normalise as normalisation
from pipeline.chain.run import copied
from pipeline.normalise import decomposition_table
from pipeline.normalise.local import decompose_locally
from pipeline.programs import save_program
from pipeline.tosa.registry import lowered_targets

pytestmark = pytest.mark.needs_torch


class UserBlock(nn.Module):
    """A residual block as users write it: a zero pad, BatchNorm, ``x.relu_()``,
    ``out += identity``, ``ReLU6(inplace=True)``, ``F.relu6(inplace=True)``, ``mul_``, dropout
    and a flatten."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = nn.Conv2d(4, 8, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 4, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(4)
        self.act = nn.ReLU6(inplace=True)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(4, 3)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        identity = x
        out = self.bn1(self.conv1(F.pad(x, (1, 1, 1, 1))))
        out.relu_()
        out = self.bn2(self.conv2(out))
        out += identity
        out = self.act(out)
        out = F.relu6(out, inplace=True)
        out.mul_(0.5)
        out = self.drop(F.adaptive_avg_pool2d(out, 1))
        return self.fc(torch.flatten(out, 1))


class WriteThroughView(nn.Module):
    """``y = x.view(...); x.relu_(); return y``: the write reaches ``y``, an alias."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, image):
        x = self.conv(image)
        y = x.view(1, -1)
        x.relu_()
        return y


class WriteIntoFlattened(nn.Module):
    """An in-place write into a flatten's result (a view of the conv's output)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, image):
        x = self.conv(image)
        flat = torch.flatten(x, 1)
        flat.add_(1.0)
        return x * 2.0


class WriteAfterInplaceDropout(nn.Module):
    """``y = F.dropout(x, inplace=True)`` in eval is ``x`` itself: ``x.relu_()`` after it
    reaches ``y``."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, image):
        x = self.conv(image)
        y = F.dropout(x, 0.1, self.training, inplace=True)
        x.relu_()
        return y * 1.0


def exported(model, *inputs):
    with torch.no_grad():
        return torch.export.export(model.eval(), inputs)


def nodes(program) -> list[tuple]:
    """Every node as (op, name, target, arguments by name): the program's structure."""
    return [(n.op, n.name, str(n.target), repr(n.args), repr(n.kwargs))
            for n in program.graph.nodes]


def saved(program, folder) -> bytes:
    folder.mkdir()
    save_program(program, folder / "model.pt2")
    return (folder / "model.pt2").read_bytes()


def normalised(program, local: bool):
    """normalise() of a copy of ``program``, with the in-graph rewrite or without it."""
    if local:
        return normalisation.normalise(copied(program), lowered_targets())
    original = normalisation.decompose_locally
    normalisation.decompose_locally = lambda *args: None
    try:
        return normalisation.normalise(copied(program), lowered_targets())
    finally:
        normalisation.decompose_locally = original


def test_user_block_takes_the_fast_path_and_matches_the_retrace(tmp_path):
    x = torch.randn(1, 4, 8, 8)
    program = exported(UserBlock(), x)
    before = nodes(program)
    lowered = lowered_targets()
    table = decomposition_table(lowered)
    local = decompose_locally(program, table, lowered)
    assert local is not None, "the user block must not need a re-trace"
    assert nodes(program) == before, "the exported program must be left as it was"
    retraced = program.run_decompositions(table)
    assert nodes(local) == nodes(retraced)
    assert saved(local, tmp_path / "local") == saved(retraced, tmp_path / "retraced")
    targets = {str(n.target) for n in local.graph.nodes}
    assert not any(t.endswith(("_.default", "_.Tensor")) for t in targets), targets
    assert "aten.batch_norm.default" not in targets and "aten.dropout.default" not in targets

    fast, slow = normalised(program, True), normalised(program, False)
    assert nodes(fast) == nodes(slow)
    assert saved(fast, tmp_path / "fast") == saved(slow, tmp_path / "slow")
    with torch.no_grad():
        expected = UserBlock().eval()(x.clone())
        assert torch.equal(fast.module()(x), slow.module()(x))
    torch.testing.assert_close(fast.module()(x), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("model", [WriteThroughView, WriteIntoFlattened,
                                   WriteAfterInplaceDropout])
def test_write_that_may_reach_an_alias_is_retraced_with_the_right_values(model):
    image = torch.randn(1, 3, 4, 4)
    program = exported(model(), image)
    lowered = lowered_targets()
    assert decompose_locally(program, decomposition_table(lowered), lowered) is None
    normal = normalised(program, True)
    assert not any(str(n.target).endswith(("_.default", "_.Tensor"))
                   for n in normal.graph.nodes)
    with torch.no_grad():
        expected = model().eval()(image.clone())
        torch.testing.assert_close(normal.module()(image), expected, rtol=0, atol=0)


def test_training_mode_batchnorm_is_retraced():
    """A BatchNorm in training mode updates its running statistics: buffers the program
    writes, which only the re-trace handles."""
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4), nn.ReLU(inplace=True)).train()
    program = torch.export.export(model, (torch.randn(2, 3, 4, 4),))
    lowered = lowered_targets()
    assert decompose_locally(program, decomposition_table(lowered), lowered) is None


class NamedInput(nn.Module):
    """A forward() argument named like a Python builtin, which FX renames in a copy."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(6, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, input):
        return self.bn(self.fc(input)).relu_()


def test_argument_named_input_keeps_its_name(tmp_path):
    x = torch.randn(2, 6)
    program = exported(NamedInput(), x)
    lowered = lowered_targets()
    table = decomposition_table(lowered)
    local = decompose_locally(program, table, lowered)
    assert local is not None
    retraced = program.run_decompositions(table)
    assert nodes(local) == nodes(retraced)
    assert saved(local, tmp_path / "local") == saved(retraced, tmp_path / "retraced")
    fast = normalised(program, True)
    assert torch.equal(fast.module()(x), normalised(program, False).module()(x))
    # a deep copy whose placeholder FX renamed: the re-trace's, which copes with it
    assert decompose_locally(copy.deepcopy(program), table, lowered) is None
