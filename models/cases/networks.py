"""The example networks of models/: which class each file ships, their targets.yaml entries,
and one network compiled through the whole chain up to Vela (``pipeline.chain.run``).

Shared by the tests (tests/models/, the VGF and CPU end-to-end tests) and the benchmarks
(example_networks.py, bench_cpu_kernels.py, bench_vgf.py).
"""

from __future__ import annotations

import importlib
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

# Every network of models/ as a targets.yaml model entry (source and inputs), by model name.
MODELS = {
    "add": "models/add.py:AddModel, inputs: [{name: x, shape: [1, 8, 8, 16]}, "
           "{name: y, shape: [1, 8, 8, 16]}]",
    "cnn": "models/cnn.py:SmallCNN, inputs: [{name: image, shape: [1, 3, 32, 32]}]",
    "ds_cnn": "models/ds_cnn.py:DSCNN, inputs: [{name: mfcc, shape: [1, 1, 49, 10]}]",
    "resnet8": "models/resnet8.py:ResNet8, inputs: [{name: image, shape: [1, 3, 32, 32]}]",
    "mobilenet_v1": "models/mobilenet_v1.py:MobileNetV1, inputs: [{name: image, "
                    "shape: [1, 3, 96, 96]}]",
    "autoencoder": "models/autoencoder.py:AutoEncoder, inputs: [{name: features, "
                   "shape: [1, 640]}]",
    "mobilenet_v2": "models/mobilenet_v2.py:MobileNetV2, inputs: [{name: image, "
                    "shape: [1, 3, 96, 96]}]",
    "transformer": "models/transformer_block.py:TransformerBlock, inputs: [{name: tokens, "
                   "shape: [1, 16, 64]}]",
}  # fmt: skip
# A short calibration for builds that check what a graph computes, not how well it is
# quantized (the VGF run check and its benchmark): 4 samples, min/max, no bias correction.
CALIBRATION = "{samples: 4, seed: 1, observer: minmax, bias_correction: false}"


def network(name: str):
    """The model class ``models/<name>.py`` ships."""
    return getattr(importlib.import_module(f"models.{name}"), NETWORKS[name])


def compile_network(name: str, folder: Path, accelerators=ACCELERATORS, calibration: int = 4,
                    tests: int = 2) -> dict:
    """Quantize (int8), lower to a target's default spec, verify and Vela-compile one
    network (``pipeline.chain.run.compile_model``) on ``calibration`` and ``tests`` input
    sets; ``{"verify": report, "tosa_ops": [...], "vela": {accelerator: figures},
    "seconds": s}``."""
    from models.cases import case_inputs
    from pipeline.chain.run import compile_model
    from pipeline.config.tosa_spec import DEFAULT_TOSA
    from pipeline.tosa.flatbuffer import operator_names

    model = network(name)()
    example, calibration_samples, test_samples = case_inputs(model.example_shapes,
                                                             calibration, tests)
    start = time.perf_counter()
    done = compile_model(model, example, calibration_samples, test_samples, folder,
                         spec=str(DEFAULT_TOSA), npus=accelerators, where=name)
    ops = [op for op in operator_names(folder / "model.tosa") if not op.startswith("CONST")]
    return {"verify": done.report, "tosa_ops": ops, "vela": done.vela,
            "seconds": time.perf_counter() - start}
