#!/usr/bin/env python3
"""Side by side: NPU cycles of TFLite + Vela (litert-torch 0.10.0 int8) and of ours, per model.

Usage: .venv-litert/bin/python benchmarks/bench_vs_tflite.py [--targets targets.yaml]
       [--models cnn,ds_cnn] [--npus ethos-u55-128,ethos-u85-256] [--repeat N] [--keep DIR]
       [--json FILE] [--ours-cycles benchmarks/zoo_cycles.json]

The models are those of ``--targets`` (default: this project's targets.yaml; the zoo:
models/zoo/targets.yaml), every one under ``models:`` or the ``--models`` named. Both flows
run in one process on the same float model and the same calibration samples (drawn by our
export stage), and Vela 5.2.0 with the same options per NPU: the accelerator, vela.ini, system
config and memory mode our targets use, and the rest of our Vela options.

- ours: the stage functions, cold, as a build runs them (benchmarks/vs_executorch/ours.py):
  export, quantize (the model's observer), lower, verify; vela + package per NPU.
- theirs: torch.export -> litert-torch's PT2E quantizer (int8, per-channel weights) calibrated
  on the same samples -> litert_torch.convert -> .tflite -> Vela per NPU. Converted with the
  model's own input layout and with float inputs / outputs of rank >= 3 channel-last
  (to_channel_last_io); per NPU the better one counts (fewer CPU operators, then fewer NPU
  cycles), so a boundary transpose does not count against them.

Prints a Markdown row per model and NPU (NPU cycles both sides, ours/theirs, % operators on the
NPU each side, their layout, torch SQNR of both quantized programs) and per NPU the geomean of
ours/theirs. Cycles are Vela's estimates: there is no Ethos-U hardware here. With
``--ours-cycles`` our side is read from a recorded zoo build instead of built again.

Needs `.venv-litert` (benchmarks/setup_litert.sh); started from another interpreter, the
script re-runs itself there when it exists, else says what is missing and exits 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.vs_tflite.cli import main

if __name__ == "__main__":
    sys.exit(main(description=__doc__.splitlines()[0]))
