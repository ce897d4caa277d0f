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
