"""NPU variants of a lowered graph: the lower stage writes one per family, the verify stage
checks those that differ, and Vela compiles the U55 one in fewer cycles."""

import json

import pytest
import torch
from torch import nn

from pipeline.stages.lower import lower
from pipeline.stages.quantize import quantize
from pipeline.verify.check import verify
from pipeline.tosa.flatbuffer import operator_names
from tests.tosa.lowering_cases import export_case, run_vela

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class GlobalPoolHead(nn.Module):
    """conv -> relu -> global average pool over 8x8 -> linear: a ResNet-8 style head."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 32, 3, padding=1)
        self.fc = nn.Linear(32, 4)

    def forward(self, x):
        pooled = nn.functional.adaptive_avg_pool2d(torch.relu(self.conv(x)), 1)
        return self.fc(torch.flatten(pooled, 1))


@pytest.fixture(scope="module")
def lowered(tmp_path_factory):
    folder = tmp_path_factory.mktemp("variants")
    case = export_case(GlobalPoolHead(), [(1, 3, 8, 8)], folder)
    quantize(case.path("model.pt2"), case.path("calibration.pt"), case.path("quantized.pt2"))
    variants = {v: folder / f"model.{v}.tosa" for v in ("u55", "u85")}
    lower(case.path("quantized.pt2"), case.tosa, case.path("io.json"),
          spec="TOSA-1.0+INT+int16", variants=variants)
    return case, variants


def _ops(path):
    return [op for op in operator_names(path) if not op.startswith("CONST")]


def test_lower_writes_a_variant_per_npu_family(lowered):
    case, variants = lowered
    assert "AVG_POOL2D" in _ops(case.tosa)
    assert variants["u85"].read_bytes() == case.tosa.read_bytes()
    assert "AVG_POOL2D" not in _ops(variants["u55"])
    assert _ops(variants["u55"]).count("DEPTHWISE_CONV2D") == 2


def test_verify_checks_the_variant_that_differs(lowered):
    case, variants = lowered
    report = verify(case.path("model.pt2"), case.path("quantized.pt2"), case.tosa,
                    case.path("io.json"), case.path("test_inputs.pt"),
                    case.path("report.json"), variants=variants, where="test/verify")
    assert report["passed"]
    assert report["variants"]["u85"] == "same graph"
    u55 = report["variants"]["u55"]
    assert u55["passed"]
    # The rewrite is bit-exact: the variant's integer outputs equal the common graph's.
    assert [o["max_abs_diff_int"] for o in u55["outputs"]] == [
        o["max_abs_diff_int"] for o in report["outputs"]]
    assert json.loads(case.path("report.json").read_text())["variants"]["u55"]["passed"]


@pytest.mark.needs_vela
def test_the_u55_variant_compiles_to_fewer_u55_cycles(lowered, tmp_path):
    case, variants = lowered
    common = run_vela(case.tosa, "ethos-u55-128", tmp_path / "common")
    variant = run_vela(variants["u55"], "ethos-u55-128", tmp_path / "u55")
    assert variant["cpu_operators"] == 0
    assert variant["cycles_npu"] < common["cycles_npu"]
