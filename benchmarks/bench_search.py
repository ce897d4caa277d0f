"""What the Vela option search won on the networks of a build folder (docs/search.md).

    .venv/bin/python -m doit build target=u55-mlperf,u85-mlperf
    .venv/bin/python benchmarks/bench_search.py build [--json out.json]

Reads ``BUILD/<target>/report.json`` of every Ethos-U target built there and prints, per NPU
configuration and model: the cycles with the target's own Vela options (the first candidate:
what a build without the search makes), the cycles of the winner and its options, the saving,
and the seconds the other candidates' compiles cost; then the geomean of after / before per
configuration. Cycles are Vela's estimates (no Ethos-U hardware or FVP here).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def rows(build: Path) -> list[dict]:
    """One row per (target, model) whose report.json has a ``vela.search``."""
    found = []
    for report_path in sorted(build.glob("*/report.json")):
        report = json.loads(report_path.read_text())
        npu = report["config"].get("npu") or {}
        for model, entry in report["models"].items():
            search = (entry.get("vela") or {}).get("search")
            if not search:
                continue
            tried = search["candidates"]
            won = tried[search["won_index"]]
            found.append({"target": report["target"], "npu": npu.get("config"), "model": model,
                          "before": tried[0]["cycles_total"], "after": won["cycles_total"],
                          "won": won["options"], "compiles": len(tried),
                          "extra_seconds": round(sum(c["seconds"] for c in tried[1:]), 2)})
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=Path, nargs="?", default=Path("build"))
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    found = rows(args.build)
    if not found:
        print(f"error: {args.build}: must hold <target>/report.json files of Ethos-U targets "
              "built with npu.search on; got none", file=sys.stderr)
        return 2
    print(f"{'npu (target)':32} {'model':13} {'own options':>11} {'searched':>9} {'saved':>7} "
          f"{'extra s':>8}  won")
    for key in sorted({(r["npu"], r["target"]) for r in found}):
        group = [r for r in found if (r["npu"], r["target"]) == key]
        for r in group:
            won = ", ".join(f"{k}={v}" for k, v in r["won"].items())
            print(f"{f'{key[0]} ({key[1]})':32} {r['model']:13} {r['before']:11,} "
                  f"{r['after']:9,} {1 - r['after'] / r['before']:7.1%} "
                  f"{r['extra_seconds']:8.1f}  {won}")
        ratio = math.exp(sum(math.log(r["after"] / r["before"]) for r in group) / len(group))
        print(f"{'':32} {'geomean':13} {'':11} {'':9} {1 - ratio:7.1%} "
              f"{sum(r['extra_seconds'] for r in group):8.1f}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
