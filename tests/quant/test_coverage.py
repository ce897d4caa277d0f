"""Total quantizer coverage (pipeline/quant/coverage.py): every node gets an annotation or is
left as it is on purpose, so the lowering names what it cannot do - never "a float program"."""

import operator

import pytest
import torch
from torch import nn

from pipeline.errors import UnsupportedOperatorError
from tests.tosa.lowering_cases import Fn, integers, lower_case, run_case

pytestmark = pytest.mark.needs_torch


def annotated(fn, *inputs) -> torch.fx.GraphModule:
    """The normalised program of ``fn`` as the quantize flow annotates it."""
    from pipeline.quant.quantizer import EthosUQuantizer
    from pipeline.tosa.registry import quant_rules
    from pipeline.chain.export import export as export_program

    module = export_program(Fn(fn), inputs).module(check_guards=False)
    return EthosUQuantizer("int8", rules=quant_rules()).annotate(module)


def annotation(gm, target, index: int | None = None):
    """The annotation of the node calling ``target`` (or of its ``getitem`` ``index``)."""
    from pipeline.quant.coverage import KEY

    node = next(n for n in gm.graph.nodes if str(n.target) == target)
    if index is not None:
        node = next(u for u in node.users if u.target is operator.getitem and u.args[1] == index)
    return node.meta.get(KEY)


def is_float(node) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and value.dtype.is_floating_point


X, Y = torch.rand(4, 6), torch.rand(4, 6)


def test_unknown_operator_is_observed_like_an_elementwise_one():
    from torchao.quantization.pt2e.quantizer import QuantizationSpec

    found = annotation(annotated(lambda m, x, y: torch.atan2(x, y), X, Y), "aten.atan2.default")
    assert len(found.input_qspec_map) == 2
    assert all(type(s) is QuantizationSpec for s in found.input_qspec_map.values())
    assert type(found.output_qspec) is QuantizationSpec


def test_unknown_view_shares_its_input_qparams():
    from torchao.quantization.pt2e.quantizer import SharedQuantizationSpec

    gm = annotated(lambda m, x, y: torch.diagonal(x) * 2, X, Y)
    assert isinstance(annotation(gm, "aten.diagonal.default").output_qspec, SharedQuantizationSpec)


def test_items_of_an_operator_with_several_outputs():
    """max.dim moves values: its values (amax after the normalisation) share the input's
    qparams, its indices (argmax, int64) are left as they are; var_mean computes: each item
    gets its own."""
    from torchao.quantization.pt2e.quantizer import QuantizationSpec, SharedQuantizationSpec

    gm = annotated(lambda m, x, y: (torch.max(x, 1), torch.var_mean(y, 1)), X, Y)
    assert isinstance(annotation(gm, "aten.amax.default").output_qspec, SharedQuantizationSpec)
    assert annotation(gm, "aten.argmax.default").output_qspec is None  # its input quantized
    for index in (0, 1):
        assert type(annotation(gm, "aten.var_mean.correction", index).output_qspec) is (
            QuantizationSpec
        )


def forward_with_ids(m, ids, x):
    """int64 ids used as users write them: arithmetic, masks, an embedding, float casts, an
    integer sum beside a float output."""
    shifted = (ids + 3) % 10
    rows = torch.where(((ids > 2) & (shifted < 8)).unsqueeze(-1), m[0](shifted), x)
    weight = (ids > 4).unsqueeze(-1).float() + ids.float().unsqueeze(-1) * x
    return rows * weight, (ids + 1).sum()


def test_every_float_node_is_annotated_and_no_integer_is_observed():
    from pipeline.quant.coverage import KEY

    ids = torch.randint(0, 10, (2, 5))
    gm = annotated(lambda m, i, x: forward_with_ids([nn.Embedding(10, 4)], i, x) + (torch.cumprod(
        x, 1),), ids, torch.rand(2, 5, 4))
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        found = node.meta.get(KEY)
        inputs = [n for n in node.all_input_nodes if is_float(n)]
        if inputs or is_float(node):
            assert found is not None, node.format_node()
        if found is not None:
            assert all(is_float(n) for n in found.input_qspec_map), node.format_node()
            assert found.output_qspec is None or is_float(node), node.format_node()


def test_int64_ids_quantize_lower_and_verify(tmp_path):
    module = Fn(forward_with_ids, nn.Embedding(10, 4))
    _, report = run_case(module, [integers((2, 5), 10), (2, 5, 4)], tmp_path)
    assert report["passed"]


class Cumprod(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=1)  # no lowering: the error names this line


class ConvThenCumprod(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)

    def forward(self, x):
        return torch.cumprod(self.conv(x), dim=1)


@pytest.mark.parametrize(
    "module, shape",
    [pytest.param(Cumprod(), (2, 8), id="alone"),
     pytest.param(ConvThenCumprod(), (1, 3, 4, 4), id="after_a_conv")],
)  # fmt: skip
def test_lowering_names_an_unknown_operator_and_its_line(module, shape, tmp_path):
    with pytest.raises(UnsupportedOperatorError, match=r"aten\.cumprod\.default") as raised:
        lower_case(module, [shape], tmp_path)
    assert "test_coverage.py:" in str(raised.value) and "torch.cumprod" in str(raised.value)
    assert "float program" not in str(raised.value)


class Branches(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, torch.sin, torch.cos, (x,))  # picked at run time


class NestedBranches(nn.Module):
    def forward(self, x):
        def outer(y):
            return torch.cond(y.mean() > 0, torch.sin, torch.cos, (y,))

        return torch.cond(x.sum() > 0, outer, torch.cos, (x,))


@pytest.mark.parametrize("module", [Branches(), NestedBranches()], ids=["cond", "nested_cond"])
def test_cond_on_a_computed_predicate_is_refused_with_its_line(module, tmp_path):
    with pytest.raises(UnsupportedOperatorError, match="predicate that folds to a constant"):
        lower_case(module, [(2, 8)], tmp_path)


class Loop(nn.Module):
    """A decaying accumulation written with torch's while_loop (its count is data)."""

    def forward(self, x, y):
        def cond(i, acc, step):
            return i < 3

        def body(i, acc, step):
            return i + 1, acc * 0.5 + step, step.clone()

        return torch._higher_order_ops.while_loop(cond, body, (torch.tensor(0), x, y))[1]


def test_while_loop_is_refused_with_its_line(tmp_path):
    with pytest.raises(UnsupportedOperatorError, match="while_loop") as raised:
        lower_case(Loop(), [(2, 8), (2, 8)], tmp_path)
    assert "test_coverage.py:" in str(raised.value) and "Unroll the loop" in str(raised.value)


class InPlace(nn.Module):
    """In-place forms as users write them, on arguments and on intermediate values."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind, self.conv = kind, nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x, y):
        if self.kind == "iadd_argument":
            x += y
            return x
        if self.kind == "add_argument":
            return torch.relu(x.add_(y))
        if self.kind == "residual":  # torchvision's out += identity; out = relu(out)
            out = self.conv(x)
            out += y
            return torch.relu_(out)
        x.mul_(2).sigmoid_()  # returns nothing new: x is the result
        return x - y


@pytest.mark.parametrize("kind", ["iadd_argument", "add_argument", "residual", "chain"])
def test_in_place_operators_quantize_lower_and_verify(kind, tmp_path):
    _, report = run_case(InPlace(kind), [(1, 4, 5, 5), (1, 4, 5, 5)], tmp_path)
    assert report["passed"]
