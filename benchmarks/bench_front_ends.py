#!/usr/bin/env python3
"""Signal front ends (models/zoo/front_ends.py, docs/front_ends.md) built for Ethos-U55-128
and Ethos-U85-256 in an int8 network (the front end int16 by default) and printed per case:
the front end's SQNR against float (torch's q/dq graph, held-out speech-like audio),
the TOSA graph's output SQNR in the reference model, NPU cycles per NPU, the front end's share
of them, and the NPU operator share.

Usage: .venv/bin/python benchmarks/bench_front_ends.py [--cases log_mel,whisper]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.zoo import front_ends

CASES = {
    "log_mel": lambda: front_ends.LogMel(n_fft=256, hop_length=128, n_mels=32),
    "whisper": lambda: front_ends.WhisperLogMel(n_mels=40),
    "mfcc": lambda: front_ends.MFCC(n_fft=256, hop_length=128),
    "hand_stft": lambda: front_ends.HandStft(),
}
NPUS = ("ethos-u55-128", "ethos-u85-256")


def _sqnr(reference: list, estimate: list) -> float:
    signal = sum(float((r.double() ** 2).sum()) for r in reference)
    noise = sum(float(((r.double() - e.double()) ** 2).sum()) for r, e in zip(reference, estimate))
    return round(10 * math.log10(signal / noise), 2) if noise else math.inf


def measure(name: str, folder: Path) -> dict:
    from pipeline.chain.run import compile_model
    from pipeline.graph.report import front_end_summary
    from pipeline.quant.front_end import front_end_names

    module = CASES[name]().eval()
    calibration = [(front_ends.speech_like(4000, 1, seed),) for seed in range(4)]
    tests = [(front_ends.speech_like(4000, 1, 10 + seed),) for seed in range(2)]
    done = compile_model(module, calibration[0], calibration, tests, folder, scheme="int8",
                         spec="TOSA-1.0+INT+int16", npus=NPUS, where=f"bench/{name}")
    names = front_end_names(done.quantized.graph_module)
    with torch.no_grad():  # each case is a front end alone: its output is the front end's
        floats = [module(*t) for t in tests]
        quants = [done.quantized.module(check_guards=False)(*t) for t in tests]
    row = {"front_end_sqnr_db": _sqnr(floats, quants),
           "tosa_output_sqnr_db": [round(o["sqnr_db_vs_float"], 2)
                                   for o in done.report["outputs"]]}
    for npu in NPUS:
        figures = done.vela[npu]
        front = front_end_summary({"nodes": names}, folder / npu / "per_layer.csv",
                                  figures["cycles_npu"])
        row[npu] = {"cycles_npu": figures["cycles_npu"], "npu_op_share": figures["npu_op_share"],
                    "front_end_share": front["share_of_cycles"]}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.cases.split(","):
            print(name, measure(name, Path(tmp) / name), flush=True)


if __name__ == "__main__":
    main()
