import ast
from pathlib import Path

import pytest

from pipeline.tosa import registry

pytestmark = pytest.mark.needs_torch

EXPECTED = {
    "aten.add.Tensor",
    "aten.conv2d.default",
    "aten.linear.default",
    "aten.max_pool2d.default",
    "aten.avg_pool2d.default",
    "aten.adaptive_avg_pool2d.default",
    "aten.relu.default",
    "aten.hardtanh.default",
    "aten.view.default",
    "aten.flatten.using_ints",
    "tosa.rescale",
}


def test_every_operator_module_registers_itself():
    assert EXPECTED <= set(registry.visitors())


def test_target_names():
    import torch

    from pipeline.tosa import markers

    assert registry.target_name(torch.ops.aten.add.Tensor) == "aten.add.Tensor"
    assert registry.target_name(markers.rescale) == "tosa.rescale"
    assert registry.visitor_for(torch.ops.aten.cumprod.default) is None


def test_a_target_cannot_have_two_visitors():
    registry.visitors()
    with pytest.raises(RuntimeError, match="aten.add.Tensor has two visitors"):
        registry.lowers("aten.add.Tensor")(lambda node, ctx: None)


ROOT = Path(__file__).resolve().parents[2]
# The only modules outside the operator files that still name aten targets, and why. The
# quantizer's and the placement check's central modules name none: which target takes which
# rule, and which TOSA operator takes which NPU rule, is each operator file's declaration.
ALLOWED_ATEN_LISTS = {
    # Total coverage of every operator, also those no file lowers (the lowering then names
    # them): which torch operators only move values is torch's semantics, not a lowering's.
    "pipeline/quant/coverage.py",
    # The post-training rewrites (cross-layer equalisation, bias correction) read torch's float
    # layers and the scale-equivariant operators between them, before any rule applies: an
    # ordered pattern over torch's semantics (conv -> relu/pool -> conv), whatever the lowering.
    "pipeline/quant/equalise.py",
    "pipeline/quant/layers.py",
}


def _aten_strings(path: Path) -> list[str]:
    """The ``aten.*`` string constants of a module, its docstrings left out."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and n.value.startswith("aten.") and id(n) not in docs]


def test_every_operator_file_declares_its_facets():
    """A new operator is its file plus its test: each ``op_<name>.py`` declares its
    lowering, a quantization rule for every target it lowers (``rules.COVERAGE`` when it has
    none of its own), a doc line and its profiles, and has ``tests/tosa/ops/test_op_<name>.py``."""
    from tosa.Op import Op

    from pipeline.quant.rules import Rule

    declared = registry.operators()
    lowered = {v.__module__ for v in registry.visitors().values()}
    assert set(declared) == lowered
    rules = registry.quant_rules()
    for module, operator in declared.items():
        name = module.rsplit(".", 1)[1]
        assert isinstance(operator, registry.Operator), f"{name}.py must declare OPERATOR"
        assert operator.doc and "\n" not in operator.doc, name
        assert set(operator.profiles) <= {"INT", "FP"} and "INT" in operator.profiles, name
        test = ROOT / "tests" / "tosa" / "ops" / f"test_{name}.py"
        assert test.is_file(), f"{name}.py must have its test {test.relative_to(ROOT)}"
        if "FP" in operator.profiles:  # the declaration is backed by the operator's test
            assert "FP" in test.read_text(), f"{test.name} must test the FP profile {name} declares"
        for family, by_op in operator.npu.items():
            assert set(by_op) <= set(vars(Op)), (name, set(by_op) - set(vars(Op)))
    for target, visitor in registry.visitors().items():
        found = rules.get(target)
        assert found and all(isinstance(r, Rule) for r in found), (
            f"{target} ({visitor.__module__}) must declare a quantization rule")
    # Only targets with a lowering are annotated by a rule.
    assert set(rules) == set(registry.visitors())
    registry.take_used()


def test_no_central_module_lists_aten_targets():
    """The quantizer, the placement check and the lowering core list no aten target: the
    operator files declare them. What is left is listed with its reason above."""
    central = [*(ROOT / "pipeline" / "quant").glob("*.py"),
               *(ROOT / "pipeline" / "ethosu").glob("*.py"),
               *(ROOT / "pipeline" / "tosa").glob("*.py")]
    found = {str(p.relative_to(ROOT)) for p in central if _aten_strings(p)}
    assert found == ALLOWED_ATEN_LISTS


def test_a_quantization_rule_must_be_for_a_target_its_file_lowers():
    from pipeline.quant.rules import SHARED

    registry.visitors()
    with pytest.raises(RuntimeError, match="op_fake: a quantization rule must be for a target "
                                           "it lowers"):
        registry._declare("pipeline.tosa.ops.op_fake",
                          registry.Operator("x", quant={"aten.add.Tensor": SHARED}))


def test_an_npu_rule_has_one_owner_per_family_and_tosa_operator():
    registry.visitors()
    twice = registry.Operator("x", quant={}, npu={"u55": {"RESIZE": lambda op: None}})
    with pytest.raises(RuntimeError, match="TOSA RESIZE on u55 has rules in two files: "
                                           "pipeline.tosa.ops.op_upsample and .*op_fake"):
        registry._declare("pipeline.tosa.ops.op_fake", twice)


def test_the_quantizer_marks_the_operator_files_whose_rules_it_applied():
    """``conv -> relu`` and ``x + y``: the rules of op_conv2d, op_clamp (the fused relu) and
    op_add were consulted, so the quantize stage's second-level key covers those files; a
    node without a rule (getitem, placeholder) marks none."""
    import torch
    from torch import nn

    from pipeline.quant.quantizer import EthosUQuantizer

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 1)

        def forward(self, x, y):
            return torch.relu(self.conv(x)) + y

    inputs = (torch.rand(1, 3, 4, 4), torch.rand(1, 3, 4, 4))
    module = torch.export.export(Net().eval(), inputs).module(check_guards=False)
    registry.take_used()
    EthosUQuantizer("int8", rules=registry.quant_rules()).annotate(module)
    assert registry.take_used() == {"pipeline.tosa.ops.op_conv2d", "pipeline.tosa.ops.op_clamp",
                                    "pipeline.tosa.ops.op_add"}


@pytest.mark.needs_tosa_ref
def test_the_placement_check_marks_the_operator_files_whose_npu_rules_it_applied(tmp_path):
    """A permute lowers to a TRANSPOSE: on Ethos-U55 its rules are op_permute's, so the vela
    stage's key covers that file; Ethos-U85 has no rule of an operator file's, so none."""
    from pipeline.ethosu.placement import check_npu_constraints
    from tests.tosa.lowering_cases import Fn, lower_case

    case = lower_case(Fn(lambda m, x: x.permute(0, 2, 1)), [(1, 4, 8)], tmp_path)
    registry.take_used()
    check_npu_constraints(case.tosa, "ethos-u55-128")
    assert registry.take_used() == {"pipeline.tosa.ops.op_permute"}
    check_npu_constraints(case.tosa, "ethos-u85-256")
    assert registry.take_used() == set()
