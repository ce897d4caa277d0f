#!/usr/bin/env python3
"""Side by side: ExecuTorch 1.5.1's Arm Ethos-U AOT flow and ours, on a targets file's models.

Usage: .venv-executorch/bin/python benchmarks/bench_vs_executorch.py [--targets targets.yaml]
       [--models cnn,ds_cnn] [--npus ethos-u55-128,ethos-u85-256] [--repeat N] [--keep DIR]
       [--json FILE] [--end-to-end] [--observers minmax,histogram,mse] [--sqnr-inputs N]
       [--sqnr-only]

The models are those of ``--targets`` (default: this project's targets.yaml), every one under
``models:`` or the ``--models`` named: their source, inputs (specs or factory), calibration
samples and observer, as the build would use them. A model whose own code fails is skipped
with a note.

Needs an environment holding both flows: `benchmarks/setup_executorch.sh` makes
`.venv-executorch` (torch, torchao, tosa-tools and ethos-u-vela at this project's pins, plus
executorch 1.5.1 and this project). Started from another interpreter without executorch, the
script re-runs itself in `.venv-executorch` when that exists; otherwise it says what is missing
and exits 2.

Both flows run in this one process, on the same float model, the same 16 calibration samples
and the same 4 test inputs (drawn by our export stage), and Vela 5.2.0 with the same options
(ExecuTorch's defaults for each NPU are the system config / memory mode our targets use, and
the other Vela options are Vela's defaults on both sides). Before anything is timed, both flows
run once on a tiny conv model so lazy imports and first-call set-up are paid by neither. With
`--repeat N` the flows alternate N times per model and each flow's time is its fastest run
(the machine has 2 cores: anything else running skews a single run).

- ours: the stage functions, cold (no store): export, quantize (with the calibration observer
  the targets file gives the model, the default if none), lower, verify once per model,
  then vela + package per NPU. AOT time of a row = shared stages + that NPU's vela + package.
- theirs: per NPU (its quantizer depends on the compile spec): torch.export, EthosUQuantizer +
  prepare_pt2e / calibrate / convert_pt2e, torch.export, to_edge_transform_and_lower with
  EthosUPartitioner, to_executorch, .pte written. Vela runs inside it; ethosu.vela.vela.main is
  wrapped to read Vela's summary CSV and operator counts from each call (and to keep the TOSA
  it was given) - nothing else in their flow is changed.

Figures (Vela's summary, parsed by our own parse_figures for both): NPU cycles (`cycles_npu`),
total cycles, SRAM used and flash used (on-chip + off-chip) in KiB. NPU op share: ours is
Vela's NPU operators / all operators; theirs also counts every operator ExecuTorch left
outside its delegates as a CPU operator (the quantize of each input and dequantize of each
output are not counted on either side: our runtime does those from io_meta).

SQNR vs the float model over the 4 test inputs (the minimum over outputs):
- `tosa` columns: the integer TOSA graph run in the TOSA reference model (ours: our verify
  stage; theirs: the TOSA flatbuffer their backend handed to Vela, fed the inputs quantized
  with the scale / zero point of the quantize node in front of the delegate and dequantized
  with the dequantize node after it; only when one delegate holds the whole graph),
- `torch` columns: the quantized (q/dq) ExportedProgram run by torch (ours: verify's
  `sqnr_db_torch_quantized_vs_float`; theirs: the converted PT2E program re-exported).

SQNR of the quantized (q/dq) graphs run by torch over more inputs (`--sqnr-inputs`, default
64: the 4 test inputs and more drawn the same way), where one rounding flip in a few logits
no longer moves the figure by a decibel: ours with the model's observer and, with
`--observers`, with each observer named; theirs. `--sqnr-only` measures only these (no
lowering, no Vela, on either side): a quick quantization comparison.

`--end-to-end` adds one more comparison: a `doit verify package` cold build of every selected
model for both NPUs with a fresh store (a subprocess: interpreter start, imports, doit, store)
against a subprocess that runs only their flow over the same models and NPUs.

The code is the package ``benchmarks/vs_executorch/`` (its ``__init__`` lists the modules);
this script is its command line.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.vs_executorch.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(description=__doc__.splitlines()[0]))
