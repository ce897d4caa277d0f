"""The example models end to end: quantize -> lower -> verify, then Vela for Ethos-U55/U85.

Vela must place every operator on the NPU (TOSA input has no CPU fallback; a partial
placement would be a compile error or a CPU operator count above zero).
"""

import json

import pytest
import torch
from torch import nn

from models.add import AddModel
from models.cnn import SmallCNN
from tests.tosa.lowering_cases import A16W8, INT8, lower_case, run_vela, verify_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class ResidualBlock(nn.Module):
    """Test-only: what ResNets need beyond SmallCNN - a residual ADD+relu, odd input sizes
    with strided conv/pooling, BatchNorm on both branches."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.conv1, self.bn1 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.conv2, self.bn2 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        z = nn.functional.max_pool2d(torch.relu(x + y), 3, 2, 1)
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(z, 1), 1))


MODELS = {
    "add": (AddModel, AddModel.example_shapes),
    "cnn": (SmallCNN, SmallCNN.example_shapes),
    "resblock": (ResidualBlock, [(1, 3, 33, 31)]),
}
ACCELERATORS = ("ethos-u55-128", "ethos-u85-256")
EXPECTED_OPS = {
    "add": ["RESCALE", "RESCALE", "ADD", "RESCALE"],
    # conv+BN+relu, maxpool, conv+relu, global avgpool, flatten+linear: BN folded, relus
    # fused into the RESCALEs, the flatten/linear reshapes collapsed to the final one.
    "cnn": [
        "CONV2D",
        "RESCALE",
        "MAX_POOL2D",
        "CONV2D",
        "RESCALE",
        "AVG_POOL2D",
        "CONV2D",
        "RESCALE",
        "RESHAPE",
    ],
}


@pytest.fixture(
    scope="module",
    params=[(m, d) for m in MODELS for d in (INT8, A16W8)],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def lowered(request, tmp_path_factory):
    name, dtype = request.param
    model, shapes = MODELS[name]
    case = lower_case(
        model(),
        shapes,
        tmp_path_factory.mktemp(f"{name}_{dtype}"),
        dtype,
        where=f"test-{name}/lower",
    )
    return name, dtype, case


def test_verify_passes(lowered):
    name, dtype, case = lowered
    report = verify_case(case, where=f"test-{name}/verify")
    assert report["passed"]
    output = report["outputs"][0]
    assert output["max_abs_diff_int"] <= output["tolerance"]
    assert output["sqnr_db_vs_float"] > 30
    if dtype == INT8:
        assert output["exact_match_fraction"] >= 0.8
        assert case.ops() == EXPECTED_OPS.get(name, case.ops())


def test_io_is_nhwc_for_4d_tensors(lowered):
    name, dtype, case = lowered
    io = case.io()
    first = io["inputs"][0]
    assert first["layout"] == "NHWC" and first["dtype"] == ("int8" if dtype == INT8 else "int16")
    n, c, h, w = first["torch_shape"]
    assert first["shape"] == [n, h, w, c]
    assert "TRANSPOSE" not in case.ops()


@pytest.mark.needs_vela
@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_vela_puts_every_operator_on_the_npu(lowered, accelerator, tmp_path):
    name, dtype, case = lowered
    figures = run_vela(case.tosa, accelerator, tmp_path)
    assert figures["cpu_operators"] == 0
    assert figures["npu_op_share"] == 1.0
    assert figures["cycles_npu"] > 0
    (case.folder / f"vela_{accelerator}.json").write_text(json.dumps(figures))
