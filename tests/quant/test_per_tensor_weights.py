"""Weights quantized per tensor (``calibration.weights: per_tensor``): one scale per weight
tensor, which the lowering folds into one multiplier per layer; verified like per channel."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import A16W8, INT8, run_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class SmallNet(nn.Module):
    """Conv with BatchNorm, in-place relu, a depthwise conv, a residual and a linear head."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        x = torch.relu_(self.bn(self.conv(x)))
        y = self.dw(x)
        y += x
        return self.head(y.mean((2, 3)))


@pytest.mark.parametrize("dtype", [INT8, A16W8])
def test_per_tensor_weights_lower_and_verify(dtype, tmp_path):
    from pipeline.programs import load_program

    case, report = run_case(SmallNet().eval(), [(1, 3, 8, 8)], tmp_path, dtype, "per_tensor")
    assert report["passed"]
    targets = {str(n.target) for n in load_program(case.path("quantized.pt2")).graph.nodes}
    assert not any("per_channel" in t for t in targets)
    assert any("quantize_per_tensor" in t for t in targets)


def test_unknown_weight_granularity_is_a_user_error():
    from pipeline.errors import UserError
    from pipeline.quant.schemes import get_scheme

    with pytest.raises(UserError, match="weights must be one of per_channel, per_tensor"):
        get_scheme("int8", "t", "mse", "per_group")


def test_per_tensor_weights_reach_the_quantize_options(tmp_path):
    from pipeline.config import load_config
    from pipeline.graph.plan import make_plan

    path = tmp_path / "targets.yaml"
    (tmp_path / "m.py").write_text(
        "import torch\nclass M(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.c = torch.nn.Conv2d(1, 2, 1)\n"
        "    def forward(self, x):\n        return self.c(x)\n"
    )
    path.write_text(
        "models:\n  m: {source: m.py:M, inputs: [{shape: [1, 1, 4, 4]}],"
        " calibration: {weights: per_tensor}}\n"
        "targets:\n  host: {cpu: cortex-a53, toolchain: aarch64-linux-gnu-gcc, npu: null,"
        " models: [m]}\n"
    )
    plan = make_plan(load_config(path), tmp_path / "build")
    assert plan.invocations["quantize:m/int8"].options["weights"] == "per_tensor"
