#!/usr/bin/env python3
"""Vela cycles of the two integer forms of bilinear upsampling, per shape and NPU.

Usage: .venv/bin/python benchmarks/bench_upsample.py [--dtypes int8,a16w8] [--factors 2,4]

"resize": RESIZE BILINEAR + RESCALE, the common lowered graph (Vela runs it on Ethos-U85
only). "filter": the U55/U65 variant of the same graph, where split_bilinear_resize made it
replicated edges + NEAREST RESIZE + DEPTHWISE_CONV2D + RESCALE. Each case is quantized,
lowered and verified against torch (max |diff| in output LSBs, exact-match fraction), then
each graph compiled by Vela; one row per case and form, with the filter form's U85 cycles
relative to the resize form's. Vela runs with a target's default system config and memory
mode for each NPU (``pipeline.chain.vela``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPES = [(1, 16, 8, 8), (1, 32, 16, 16), (1, 64, 32, 32)]
ACCELERATORS = {"resize": ["ethos-u85-256"], "filter": ["ethos-u55-128", "ethos-u85-256"]}


def measure(shape, factor: int, dtype: str, folder: Path) -> dict[str, dict]:
    """Lower (common graph + U55 variant), verify both, Vela-compile; figures per form."""
    from torch import nn

    from models.cases import SPECS, case_inputs
    from pipeline.chain.export import export
    from pipeline.chain.run import quantize_and_lower
    from pipeline.chain.vela import vela
    from pipeline.chain.verify import verify
    from pipeline.tosa.flatbuffer import operator_names

    module = nn.Upsample(scale_factor=factor, mode="bilinear", align_corners=False)
    example, calibration, tests = case_inputs([shape])
    program = export(module.eval(), example, "bench/export")
    quantized, lowering = quantize_and_lower(program, calibration, dtype, SPECS[dtype],
                                             variants=("u55",), where="bench")
    report = verify(program, quantized, lowering, tests, where="bench/verify")
    folder.mkdir(parents=True, exist_ok=True)
    common, variant = folder / "model.tosa", folder / "model.u55.tosa"
    lowering.write(common, None, {"u55": variant})
    rows = {}
    for form, tosa, outputs in (
        ("resize", common, report["outputs"]),
        ("filter", variant, report["variants"]["u55"]["outputs"]),
    ):
        ops = [op for op in operator_names(tosa) if not op.startswith("CONST")]
        row = {"ops": len(ops), "max_diff": outputs[0]["max_abs_diff_int"],
               "exact": outputs[0]["exact_match_fraction"]}  # fmt: skip
        for accelerator in ACCELERATORS[form]:
            figures = vela(tosa, accelerator, folder / form / accelerator)
            row[accelerator] = (figures["cycles_npu"], figures["npu_op_share"])
        rows[form] = row
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="int8,a16w8", help="comma-separated schemes")
    parser.add_argument("--factors", default="2", help="comma-separated scale factors")
    args = parser.parse_args()
    print(
        f"{'case':<26} {'form':<7} {'ops':>3} {'max|d|':>6} {'exact':>6} "
        f"{'U55-128 cycles':>14} {'U85-256 cycles':>14} {'U85 vs resize':>13}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-upsample-") as tmp:
        for dtype in args.dtypes.split(","):
            for factor in (int(f) for f in args.factors.split(",")):
                for shape in SHAPES:
                    name = f"{dtype} {'x'.join(map(str, shape[1:]))}->x{factor}"
                    rows = measure(shape, factor, dtype, Path(tmp) / name.replace(" ", "_"))
                    resize_u85 = rows["resize"]["ethos-u85-256"][0]
                    for form, row in rows.items():
                        u55 = row.get("ethos-u55-128", ("-", 1.0))[0]
                        u85 = row["ethos-u85-256"][0]
                        on_npu = all(v[1] == 1.0 for k, v in row.items() if k.startswith("ethos"))
                        print(
                            f"{name:<26} {form:<7} {row['ops']:>3} {row['max_diff']:>6} "
                            f"{row['exact']:>6.3f} {u55:>14} {u85:>14} "
                            f"{u85 / resize_u85:>12.2f}x" + ("" if on_npu else "  (CPU ops!)")
                        )


if __name__ == "__main__":
    main()
