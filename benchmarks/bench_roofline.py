"""How far each built network is from the NPU's limit: the rooflines of a build folder.

    .venv/bin/python -m doit build target=u55-mlperf,u85-mlperf
    .venv/bin/python benchmarks/bench_roofline.py build [--json out.json]

Reads ``BUILD/<target>/report.json`` of every Ethos-U target built there (docs/roofline.md) and
prints, per NPU configuration and model: Vela's total cycles, the limit (the sum of the
per-operation bounds) and the cycles as a multiple of it, of the MAC bound alone and of what
each operation kind can reach, and of the network's bound (max(all MACs / peak, all weight
bytes / the weights' memory bandwidth): no per-operation sums, no feature maps); then the
geomean over the models of each configuration.
Cycles are Vela's estimates (no Ethos-U hardware or FVP here).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def rows(build: Path) -> list[dict]:
    """One row per (target, model) with a roofline in its report.json."""
    found = []
    for report_path in sorted(build.glob("*/report.json")):
        report = json.loads(report_path.read_text())
        npu = report["config"].get("npu") or {}
        for model, entry in report["models"].items():
            roofline = entry.get("roofline")
            if not roofline:
                continue
            found.append({"target": report["target"], "npu": npu.get("config"), "model": model,
                          "cycles": roofline["cycles"], "limit": roofline["limit"],
                          "times_limit": roofline["times_limit"],
                          "times_mac_limit": roofline["times_mac_limit"],
                          "times_attainable": roofline["times_attainable"],
                          "times_network_bound": roofline["times_network_bound"]})
    return found


def geomean(values: list[float]) -> float:
    values = [v for v in values if v]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else math.nan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=Path, nargs="?", default=Path("build"))
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    found = rows(args.build)
    if not found:
        print(f"error: {args.build}: must hold <target>/report.json files of Ethos-U targets "
              "with a roofline; got none", file=sys.stderr)
        return 2
    columns = ("times_limit", "times_mac_limit", "times_attainable", "times_network_bound")

    def ratios(values) -> str:
        return "".join(f"{v or math.nan:.2f}x".rjust(9) for v in values)

    print(f"{'npu (target)':32} {'model':13} {'cycles':>9} {'limit':>9}"
          + "".join(h.rjust(9) for h in ("x limit", "x MAC", "x kind", "x net")))
    for key in sorted({(r["npu"], r["target"]) for r in found}):
        group = [r for r in found if (r["npu"], r["target"]) == key]
        for r in group:
            print(f"{f'{key[0]} ({key[1]})':32} {r['model']:13} {r['cycles']:9,} "
                  f"{r['limit']:9,.0f}" + ratios(r[c] for c in columns))
        means = ratios(geomean([r[c] for r in group]) for c in columns)
        print(f"{'':32} {'geomean':13} {'':9} {'':9}{means}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
