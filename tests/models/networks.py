"""Test support: the example networks of models/ compiled through every stage up to Vela.

Shared by tests/models/test_example_networks.py and benchmarks/example_networks.py.
"""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path

# model file -> class; the order is the order of the table.
NETWORKS = {
    "ds_cnn": "DSCNN",
    "resnet8": "ResNet8",
    "mobilenet_v1": "MobileNetV1",
    "autoencoder": "AutoEncoder",
    "mobilenet_v2": "MobileNetV2",
    "transformer_block": "TransformerBlock",
}
ACCELERATORS = ("ethos-u55-128", "ethos-u85-256")


def network(name: str):
    """The model class ``models/<name>.py`` ships."""
    return getattr(importlib.import_module(f"models.{name}"), NETWORKS[name])


def vela_args(accelerator: str) -> list[str]:
    """The Vela options a target with ``npu: {config: <accelerator>}`` gets by default."""
    from pipeline.config.npu import NpuConfig

    return NpuConfig.model_validate({"config": accelerator}).vela_args()


def compile_network(name: str, folder: Path, accelerators=ACCELERATORS) -> dict:
    """Quantize, lower, verify and Vela-compile one network; its verify report and figures."""
    from pipeline.config.npu import NpuConfig
    from pipeline.config.tosa_spec import DEFAULT_TOSA
    from pipeline.ethosu.vela import run_vela
    from pipeline.ethosu.placement import check_npu_constraints
    from tests.tosa import lowering_cases

    model = network(name)()
    start = time.perf_counter()
    case = lowering_cases.lower_case(model, model.example_shapes, folder, where=f"{name}/lower",
                                     spec=str(DEFAULT_TOSA))
    report = lowering_cases.verify_case(case, where=f"{name}/verify")
    result = {"verify": report, "tosa_ops": case.ops(), "vela": {}}
    for accelerator in accelerators:
        # What a build compiles: the variant of the NPU's family (verify_case checks them).
        tosa = case.variant(NpuConfig.model_validate({"config": accelerator}).variant)
        check_npu_constraints(tosa, accelerator, where=f"{name}/vela")
        outputs = run_vela(tosa, folder / accelerator, vela_args(accelerator), where=name)
        result["vela"][accelerator] = json.loads(outputs["figures"].read_text())
    result["seconds"] = time.perf_counter() - start
    return result
