"""The command line of ``bench_vs_executorch.py`` (its docstring is the --help text)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .env import ET_VENV, ROOT, executorch_problem, reexec_in_et_venv, versions
from .models import SQNR_INPUTS, select_models

DEFAULT_TARGETS = ROOT / "targets.yaml"
NPUS = ("ethos-u55-128", "ethos-u85-256")


def parse_args(argv: list[str] | None, description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench_vs_executorch.py", description=description,
        epilog="Set up the environment with benchmarks/setup_executorch.sh.")
    parser.add_argument("--targets", type=Path, default=DEFAULT_TARGETS,
                        help="a targets.yaml whose models to compare (default: this "
                        "project's targets.yaml)")
    parser.add_argument("--models", help="comma-separated names of models of --targets "
                        "(default: every model it lists)")
    parser.add_argument("--npus", default=",".join(NPUS),
                        help=f"comma-separated Ethos-U configs (default: {','.join(NPUS)})")
    parser.add_argument("--keep", type=Path, help="keep the scratch folder here")
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run both flows N times, alternating, and keep each time's "
                        "fastest run (default 1; use 3 on a busy machine)")
    parser.add_argument("--no-warmup", action="store_true",
                        help="skip the untimed warm-up run of both flows")
    parser.add_argument("--end-to-end", action="store_true",
                        help="also time a cold `doit verify package` against their flow, "
                        "each in a fresh subprocess")
    parser.add_argument("--observers", default="",
                        help="comma-separated calibration observers (minmax, histogram, mse) "
                        "or post-training techniques on the model's observer (+cle: "
                        "equalization, +bc: bias_correction, +both) whose torch SQNR to add "
                        "to the SQNR table")
    parser.add_argument("--sqnr-inputs", type=int, default=SQNR_INPUTS,
                        help=f"inputs the SQNR table is measured over (default {SQNR_INPUTS})")
    parser.add_argument("--sqnr-only", action="store_true",
                        help="only quantize, on both sides, and print the SQNR table")
    parser.add_argument("--their-flow-only", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, description: str = "") -> int:
    """Run the comparison; the exit status (2: cannot run here, 3: their flow failed on
    every model)."""
    args = parse_args(argv, description)
    npus = [n for n in args.npus.split(",") if n]
    problem = executorch_problem()
    if problem is not None:
        reexec_in_et_venv()
        print(f"bench_vs_executorch: cannot run ExecuTorch's Arm Ethos-U flow with "
              f"{sys.executable}: {problem}.\n  Make its environment with "
              f"benchmarks/setup_executorch.sh, then run "
              f"{ET_VENV / 'bin' / 'python'} benchmarks/bench_vs_executorch.py", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    entries = select_models(args.targets, args.models)
    if not entries:
        print(f"bench_vs_executorch: {args.targets} lists no model", file=sys.stderr)
        return 2
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="bench-vs-et-"))
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        if args.their_flow_only:
            from .theirs import their_flow_only

            return their_flow_only(entries, npus, scratch)
        return _compare(args, entries, npus, scratch)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


def _compare(args: argparse.Namespace, entries: list, npus: list[str], scratch: Path) -> int:
    from pipeline.chain.vela import vela_args

    from .end_to_end import end_to_end
    from .report import print_sqnr_table, print_table
    from .run import bench

    found = versions()
    print("versions: " + ", ".join(f"{k} {v}" for k, v in found.items()))
    print(f"Vela options (both flows): {' '.join(vela_args(npus[0])[:8])} ... "
          "(ExecuTorch: the same accelerator / system config / memory mode, the rest at "
          "Vela's defaults, which equal ours)")
    print(f"models: {', '.join(e.name for e in entries)}; NPUs: {', '.join(npus)}; "
          f"{os.cpu_count()} CPU cores")
    load_before = os.getloadavg()[0]
    rows = bench(entries, npus, scratch, warm_up=not args.no_warmup,
                 repeat=max(1, args.repeat), observers=[o for o in args.observers.split(",") if o],
                 sqnr_count=max(1, args.sqnr_inputs), sqnr_only=args.sqnr_only)
    load_after = os.getloadavg()[0]
    if not rows:
        print("bench_vs_executorch: no model could be built", file=sys.stderr)
        return 2
    summary = {} if args.sqnr_only else print_table(rows)
    summary["sqnr"] = print_sqnr_table(rows)
    print(f"load average (1 min) before / after the runs: {load_before:.1f} / "
          f"{load_after:.1f} on {os.cpu_count()} cores"
          + ("  - the machine was busy: times are noisy, prefer --repeat 3"
             if max(load_before, load_after) > (os.cpu_count() or 1) else ""))
    if all(r["theirs"]["error"] for r in rows):
        print("bench_vs_executorch: ExecuTorch's Arm Ethos-U flow failed on every model: "
              "it cannot run here (errors above)", file=sys.stderr)
        return 3
    e2e = None
    if args.end_to_end and not args.sqnr_only:
        built = [e for e in entries if any(r["model"] == e.name for r in rows)]
        e2e = end_to_end(built, npus, scratch, args.targets)
    if args.json:
        args.json.write_text(json.dumps({"versions": found, "rows": rows, "summary": summary,
                                         "end_to_end": e2e}, indent=2, default=str) + "\n")
    return 0
