"""Global average pooling on Ethos-U: one AVG_POOL2D vs the U55 variant's two depthwise sums.

For each input shape, builds an int8 graph holding one global AVG_POOL2D (between two
RESCALEs, as in a network), applies ``split_global_pool`` to a copy, and compiles both with
the project's Vela stage for Ethos-U55-128 and Ethos-U85-256 (default system configs).
Prints Vela's NPU cycles and the encoded weight bytes of each form; the pass's
``MIN_CELLS`` threshold and its U55-only placement come from these figures.

    .venv/bin/python benchmarks/bench_global_pool.py [--shapes 8x8x64,7x7x32]
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.chain.vela import vela  # noqa: E402
from pipeline.tosa import serialize  # noqa: E402
from pipeline.tosa.graph import TosaGraph  # noqa: E402
from pipeline.tosa.passes import split_global_pool_pass  # noqa: E402
from pipeline.tosa.quant_math import encode_scale  # noqa: E402
from pipeline.tosa.spec import parse_spec  # noqa: E402

SHAPES = "8x8x64,7x7x32,25x5x64,10x10x64,12x12x32,16x16x16,8x8x256,6x6x64,4x4x128,3x3x256"
NPUS = ("ethos-u55-128", "ethos-u85-256")


def _rescale(graph: TosaGraph, src: str, shape, name: str) -> str:
    """An identity RESCALE, so the pool reads and writes tensors inside the network."""
    multiplier, shift = encode_scale(1.0)
    out = graph.add_tensor(name, shape, "int8")
    consts = [graph.add_const(f"{name}_{k}", np.array([v]), t) for k, v, t in (
        ("multiplier", multiplier, "int32"), ("shift", shift, "int8"),
        ("input_zp", -3, "int8"), ("output_zp", -3, "int8"))]
    graph.add_op("RESCALE", [src, *consts], [out], scale32=True, rounding_mode="SINGLE_ROUND",
                 per_channel=False, input_unsigned=False, output_unsigned=False)
    return out


def pool_graph(h: int, w: int, c: int) -> TosaGraph:
    graph = TosaGraph(parse_spec("TOSA-1.0+INT+int16"))
    x = _rescale(graph, graph.add_input("x", (1, h, w, c), "int8"), (1, h, w, c), "before")
    pooled = graph.add_tensor("pooled", (1, 1, 1, c), "int8")
    zps = [graph.add_const(n, np.array([-3]), "int8") for n in ("pool_in_zp", "pool_out_zp")]
    graph.add_op("AVG_POOL2D", [x, *zps], [pooled], kernel=[h, w], stride=[1, 1],
                 pad=[0, 0, 0, 0], acc_type="int32")
    graph.outputs = [_rescale(graph, pooled, (1, 1, 1, c), "after")]
    return graph


def compile_form(graph: TosaGraph, npu: str, folder: Path) -> dict:
    folder.mkdir(parents=True)
    serialize.write(graph, folder / "model.tosa")
    return vela(folder / "model.tosa", npu, folder / "vela", where=f"bench/{npu}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=SHAPES, help=f"HxWxC list (default {SHAPES})")
    args = parser.parse_args(argv)
    print(f"{'input':>10} {'NPU':>14} | {'pool cyc':>9} {'sums cyc':>9} {'ratio':>6} | "
          f"{'pool wt B':>9} {'sums wt B':>9} | U55 variant rewrites it")
    with tempfile.TemporaryDirectory(prefix="bench-global-pool-") as tmp:
        for i, text in enumerate(args.shapes.split(",")):
            h, w, c = (int(v) for v in text.split("x"))
            pool = pool_graph(h, w, c)
            shipped = copy.deepcopy(pool)
            split_global_pool_pass.run(shipped)
            rewritten = "AVG_POOL2D" not in shipped.op_counts()
            sums = copy.deepcopy(pool)  # the rewrite without the size threshold, to compare
            threshold, split_global_pool_pass.MIN_CELLS = split_global_pool_pass.MIN_CELLS, 0
            try:
                split_global_pool_pass.run(sums)
            finally:
                split_global_pool_pass.MIN_CELLS = threshold
            if "AVG_POOL2D" in sums.op_counts():  # no exact 16-bit division for this size
                sums = None
            for npu in NPUS:
                a = compile_form(pool, npu, Path(tmp) / f"{i}-{npu}-pool")
                row = f"{text:>10} {npu:>14} | {a['cycles_npu']:>9,}"
                if sums is None:
                    print(f"{row} {'-':>9} {'-':>6} | {a['total_npu_encoded_weights']:>9,} "
                          f"{'-':>9} | no (no exact division)", flush=True)
                    continue
                b = compile_form(sums, npu, Path(tmp) / f"{i}-{npu}-sums")
                print(f"{row} {b['cycles_npu']:>9,} {b['cycles_npu'] / a['cycles_npu']:>6.2f} | "
                      f"{a['total_npu_encoded_weights']:>9,} {b['total_npu_encoded_weights']:>9,}"
                      f" | {'yes' if rewritten else 'no'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
