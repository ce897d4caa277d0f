#!/usr/bin/env python3
"""Numerics on models nobody tuned for: our int8 quantizer against ExecuTorch 1.5.1's.

Usage: .venv-executorch/bin/python benchmarks/bench_numerics.py [--nets 56] [--seed 0]
       [--zoo targets.yaml | --no-zoo] [--only NAME,...] [--json FILE] [--theirs-from FILE]
       [--quantize OPTION=VALUE ...]

The networks are those ``benchmarks/gen_nets`` generates (``--nets`` of them from ``--seed``:
conv / depthwise / residual / attention in turn, BatchNorm statistics from data, structured
inputs), plus the models of ``--zoo`` (default: this project's targets.yaml; their inputs
drawn as our export stage draws them, their observer and techniques from the file).

Per network, both quantizers see the same float model, the same 16 calibration samples and
the same 64 test inputs: ours is the quantize stage's flow in memory (export, normalise,
quantize with the calibration defaults of targets.yaml, or the zoo entry's own settings);
theirs is ``EthosUQuantizer(EthosUCompileSpec("ethos-u55-128"))`` with
``get_symmetric_quantization_config(is_per_channel=True)``, prepare / calibrate / convert
(``bench_vs_executorch``'s ``--sqnr-only`` path). The SQNR is the torch-side one of
``bench_vs_executorch`` (the q/dq program run by torch against the float model, every test
input pooled, the minimum over outputs).

Printed: per network both SQNRs, ours - theirs and our quantize time (ms, cold: from the
exported float program to the q/dq program, normalisation and calibration included); then the
distribution of ours - theirs per family and over all (min, p5, median, mean in dB, which is
the geometric mean of the ratio of SQNRs, and the share >= -0.1 dB) against the issue's goals.

``--theirs-from`` reuses ExecuTorch's SQNRs from an earlier ``--json`` (their side does not
change when ours does; the networks are the same for the same ``--nets`` and ``--seed``).
``--quantize observer=minmax`` (repeatable) overrides an option of our quantize on every net.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NPU = "ethos-u55-128"
GOALS = {"share_at_least_-0.1": 0.95, "median": 0.5, "depthwise_mean": 1.0}


def _parse(argv):
    parser = argparse.ArgumentParser(prog="bench_numerics.py",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--nets", type=int, default=56, help="generated networks (default 56)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    parser.add_argument("--zoo", type=Path, default=ROOT / "targets.yaml",
                        help="a targets file whose models to add (default: targets.yaml)")
    parser.add_argument("--no-zoo", action="store_true", help="generated networks only")
    parser.add_argument("--only", help="comma-separated network names to run")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--theirs-from", type=Path,
                        help="reuse ExecuTorch's SQNRs from this earlier --json")
    parser.add_argument("--ours-only", action="store_true",
                        help="measure ours only (pair it with --theirs-from, or with --report "
                        "later)")
    parser.add_argument("--report", type=Path,
                        help="only print the distribution of an earlier --json (its "
                        "ExecuTorch SQNRs from --theirs-from where given)")
    parser.add_argument("--quantize", action="append", default=[], metavar="OPTION=VALUE",
                        help="an option of our quantize for every net (repeatable)")
    return parser.parse_args(argv)


def _options(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        out[key] = {"true": True, "false": False}.get(value, value)
    return out


def _cases(args):
    """(name, family, model, calibration, tests, our options) per network."""
    from benchmarks.gen_nets import generate

    for net in generate(args.nets, args.seed):
        yield net.name, net.family, net.module, net.calibration(), net.tests(), {}
    if args.no_zoo:
        return
    from benchmarks.vs_executorch.models import draw_inputs, load_model, model_entries
    from benchmarks.vs_executorch.models import sqnr_inputs as more_inputs

    for entry in model_entries(args.zoo):
        example, calibration = draw_inputs(entry)
        options = {"observer": entry.observer, **entry.techniques}
        yield (entry.name, "zoo", load_model(entry), calibration,
               more_inputs(entry, [example], 64), options)


def _ours(model, calibration, tests, options: dict, name: str):
    """(torch SQNR, quantize ms) of our flow."""
    from benchmarks.vs_executorch.sqnr import torch_sqnr
    from pipeline.chain.export import export
    from pipeline.chain.quantize import quantize
    from pipeline.config.models import Calibration

    defaults = Calibration()
    settings = {"observer": defaults.observer, "equalization": defaults.equalization,
                "bias_correction": defaults.bias_correction, **options}
    program = export(model, tuple(calibration[0]), where=name)
    start = time.perf_counter()
    quantized, _ = quantize(program, calibration, "int8", where=name, **settings)
    ms = 1000 * (time.perf_counter() - start)
    return torch_sqnr(model, quantized.module(), tests), ms


def _theirs(model, calibration, tests, scratch: Path):
    from benchmarks.vs_executorch.theirs import run_theirs

    res = run_theirs(model, NPU, tuple(calibration[0]), calibration, tests, scratch,
                     sqnr_only=True, sqnr_inputs=tests)
    if res.error:
        raise RuntimeError(res.error)
    return res.sqnr_many


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarise(rows: list[dict]) -> dict:
    """The distribution of ours - theirs per family, over the generated nets and over all."""
    groups: dict[str, list[float]] = {}
    for row in rows:
        if row.get("delta_db") is None:
            continue
        groups.setdefault(row["family"], []).append(row["delta_db"])
        groups.setdefault("all", []).append(row["delta_db"])
        if row["family"] != "zoo":
            groups.setdefault("generated", []).append(row["delta_db"])
    out = {}
    for name, deltas in groups.items():
        out[name] = {"n": len(deltas), "min": min(deltas), "p5": _percentile(deltas, 0.05),
                     "median": statistics.median(deltas), "mean": statistics.fmean(deltas),
                     "share_at_least_-0.1": sum(d >= -0.1 for d in deltas) / len(deltas)}
    return out


def _finite(value):
    return None if value is None or not math.isfinite(value) else round(value, 3)


def _print_summary(summary: dict, rows: list[dict]) -> None:
    print(f"\n{'group':<10} {'n':>3} {'min':>7} {'p5':>7} {'median':>7} {'mean':>7} "
          f"{'>=-0.1':>7}   (ours - ExecuTorch, dB; mean dB = geomean of the SQNR ratio)")
    order = ["conv", "depthwise", "residual", "attention", "zoo", "generated", "all"]
    for name in [g for g in order if g in summary]:
        s = summary[name]
        print(f"{name:<10} {s['n']:>3} {s['min']:>7.2f} {s['p5']:>7.2f} {s['median']:>7.2f} "
              f"{s['mean']:>7.2f} {100 * s['share_at_least_-0.1']:>6.0f}%")
    times = [r["quantize_ms"] for r in rows if r.get("quantize_ms")]
    if times:
        print(f"our quantize: median {statistics.median(times):.0f} ms, "
              f"mean {statistics.fmean(times):.0f} ms, max {max(times):.0f} ms per model")
    if "all" in summary:
        a, d = summary["all"], summary.get("depthwise")
        print(f"goals: >= -0.1 dB on >= 95%: {100 * a['share_at_least_-0.1']:.0f}%; "
              f"median >= +0.5 dB: {a['median']:+.2f}; depthwise mean >= +1 dB: "
              f"{d['mean'] if d else float('nan'):+.2f}")


def _text(value, sign: str = "") -> str:
    return "-" if value is None else f"{value:{sign}.2f}"


def _report(path: Path, theirs_from: Path | None) -> int:
    """The distribution of an earlier run, ExecuTorch's SQNRs from ``theirs_from``."""
    rows = json.loads(path.read_text())["rows"]
    if theirs_from:
        theirs = {r["name"]: r.get("theirs_db") for r in json.loads(
            theirs_from.read_text())["rows"]}
        for row in rows:
            row["theirs_db"] = theirs.get(row["name"])
            row["delta_db"] = (None if row["theirs_db"] is None or row.get("ours_db") is None
                               else round(row["ours_db"] - row["theirs_db"], 3))
    _print_summary(summarise(rows), rows)
    return 0


def main(argv=None) -> int:
    args = _parse(argv)
    if args.report:
        return _report(args.report, args.theirs_from)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)  # several of these share two cores; threads only contend
    from benchmarks.vs_executorch.env import executorch_problem, quiet

    problem = None if args.ours_only else executorch_problem()
    if problem is not None:
        print(f"bench_numerics: {problem}; run it with .venv-executorch/bin/python "
              "(benchmarks/setup_executorch.sh makes it)", file=sys.stderr)
        return 2
    theirs_before = {}
    if args.theirs_from:
        theirs_before = {r["name"]: r["theirs_db"] for r in json.loads(
            args.theirs_from.read_text())["rows"]}
    only = set(args.only.split(",")) if args.only else None
    options = _options(args.quantize)
    rows = []
    scratch = Path(tempfile.mkdtemp(prefix="bench-numerics-"))
    print(f"{'net':<16} {'ours':>7} {'theirs':>7} {'delta':>7} {'ms':>7}")
    for name, family, model, calibration, tests, own in _cases(args):
        if only and name not in only:
            continue
        row = {"name": name, "family": family}
        try:
            with quiet():
                ours, ms = _ours(model, calibration, tests, {**own, **options}, name)
                theirs = theirs_before.get(name)
                if theirs is None and not args.ours_only:
                    theirs = _theirs(model, calibration, tests, scratch / name)
            delta = None if theirs is None else ours - theirs
            row.update(ours_db=_finite(ours), theirs_db=_finite(theirs),
                       delta_db=_finite(delta), quantize_ms=round(ms))
            print(f"{name:<16} {ours:>7.2f} {_text(theirs):>7} {_text(delta, '+'):>7} "
                  f"{ms:>7.0f}", flush=True)
        except Exception as exc:  # noqa: BLE001 - one network failing is a row, not the end
            row["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
            print(f"{name:<16} error: {row['error']}", flush=True)
        rows.append(row)
    summary = summarise(rows)
    _print_summary(summary, rows)
    if args.json:
        args.json.write_text(json.dumps({"nets": args.nets, "seed": args.seed,
                                         "options": options, "rows": rows,
                                         "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
