"""The command line of ``bench_vs_tflite.py`` (its docstring is the --help text): both flows
over the models, a row per model and NPU, geomeans per NPU."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .env import LITERT_VENV, ROOT, litert_problem, reexec_in_litert_venv, versions

NPUS = ("ethos-u55-128", "ethos-u85-256")
GOAL_RATIO = 0.85  # the issue's goal: ours <= 0.85x the better peer, geomean per NPU family


def parse_args(argv: list[str] | None, description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench_vs_tflite.py", description=description,
        epilog="Set up the environment with benchmarks/setup_litert.sh.")
    parser.add_argument("--targets", type=Path, default=ROOT / "targets.yaml",
                        help="a targets.yaml whose models to compare (default: this "
                        "project's targets.yaml; the zoo: models/zoo/targets.yaml)")
    parser.add_argument("--models", help="comma-separated names of models of --targets "
                        "(default: every model it lists)")
    parser.add_argument("--npus", default=",".join(NPUS),
                        help=f"comma-separated Ethos-U configs (default: {','.join(NPUS)})")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run both flows N times and keep each flow's fastest time; the "
                        "cycles must not change between runs (default 1)")
    parser.add_argument("--ours-cycles", type=Path,
                        help="take our NPU cycles from this file instead of building: a cycle "
                        "baseline (benchmarks/zoo_cycles.json) or a bench_real_models.py --json "
                        "run; a model it lacks is built")
    parser.add_argument("--keep", type=Path, help="keep the scratch folder (the .tflite files, "
                        "Vela's logs) here")
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, description: str = "") -> int:
    """Run the comparison; the exit status (2: cannot run here, 3: their flow failed on
    every model)."""
    args = parse_args(argv, description)
    npus = [n for n in args.npus.split(",") if n]
    # litert-torch's progress lines and TensorFlow Lite's C++ log: off (set before they load).
    os.environ.setdefault("LITERT_TORCH_SHOW_PROGRESS", "n")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    problem = litert_problem()
    if problem is not None:
        reexec_in_litert_venv()
        print(f"bench_vs_tflite: cannot run litert-torch with {sys.executable}: {problem}.\n"
              f"  Make its environment with benchmarks/setup_litert.sh, then run "
              f"{LITERT_VENV / 'bin' / 'python'} benchmarks/bench_vs_tflite.py", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    from benchmarks.vs_executorch.models import select_models

    entries = select_models(args.targets, args.models)
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="bench-vs-tflite-"))
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        recorded = _recorded(args.ours_cycles) if args.ours_cycles else {}
        rows = _compare(entries, npus, scratch, max(1, args.repeat), recorded)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    summary = print_table(rows, npus)
    if args.json:
        args.json.write_text(json.dumps({"versions": versions(), "rows": rows,
                                         "summary": summary}, indent=2, default=str) + "\n")
    if rows and all(r["theirs"]["error"] for r in rows):
        print("bench_vs_tflite: their flow failed on every model (errors above)",
              file=sys.stderr)
        return 3
    return 0


def _recorded(path: Path) -> dict[str, dict[str, int]]:
    """Model -> NPU -> our NPU cycles, from a cycle baseline or bench_real_models results."""
    from benchmarks import zoo_cycles

    data = json.loads(path.read_text())
    return zoo_cycles.load(path)["cycles"] if "cycles" in data else zoo_cycles.measured(data)


def _recorded_row(name: str, npu: str, cycles: int | None, t, layouts: dict) -> dict:
    """A row whose our side is a recorded build (every operator on the NPU: a build that
    leaves one on the CPU fails, so a recorded figure means 100%)."""
    row = _row(name, npu, None, t, layouts)
    row["ours"] = {"cycles_npu": cycles, "cycles_total": None,
                   "npu_share": 1.0 if cycles is not None else None, "aot_s": None,
                   "sqnr_torch_db": None, "verified": None, "recorded": True,
                   "error": None if cycles is not None else "no recorded cycles"}
    return row


def _theirs_only(entry, model, npus, scratch: Path, recorded: dict) -> list[dict]:
    """Their flow on the inputs our export stage would draw; our cycles as recorded."""
    from benchmarks.vs_executorch.env import quiet
    from benchmarks.vs_executorch.models import draw_inputs

    from .theirs import run_theirs

    print("ours: recorded; theirs#1 ", end="", flush=True)
    with quiet():
        example, calibration = draw_inputs(entry)
        them, layouts = run_theirs(model, npus, example, calibration, [example],
                                   scratch / entry.name / "theirs0")
    return [_recorded_row(entry.name, npu, recorded[entry.name].get(npu), them[npu], layouts)
            for npu in npus]


def _compare(entries, npus, scratch: Path, repeat: int, recorded: dict) -> list[dict]:
    from benchmarks.vs_executorch.env import quiet
    from benchmarks.vs_executorch.models import load_model
    from benchmarks.vs_executorch.ours import run_ours
    from pipeline.chain.vela import vela_args

    from .theirs import run_theirs

    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()))
    for npu in npus:
        print(f"Vela options ({npu}, both flows): {' '.join(vela_args(npu))}")
    print(f"models: {', '.join(e.name for e in entries)}; NPUs: {', '.join(npus)}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    rows = []
    for entry in entries:
        print(f"{entry.name}: ", end="", flush=True)
        try:
            with quiet():
                model = load_model(entry)
        except Exception as exc:  # noqa: BLE001 - the model's own code failing: skip it
            print(f"skipped: {entry.path.name}:{entry.attr} does not build: "
                  f"{type(exc).__name__}: {exc}")
            continue
        if entry.name in recorded:
            rows.extend(_theirs_only(entry, model, npus, scratch, recorded))
            print("done", flush=True)
            _print_rows_so_far(rows[-len(npus):])
            continue
        ours = theirs = None
        for run in range(repeat):
            print(f"ours#{run + 1} ", end="", flush=True)
            mine = run_ours(entry, npus, scratch / entry.name / f"ours{run}", sqnr_count=4)
            if not mine.test_inputs:
                print(f"\n  our flow failed before drawing inputs: {mine.errors}")
                break
            print(f"theirs#{run + 1} ", end="", flush=True)
            with quiet():
                them, layouts = run_theirs(model, npus, mine.test_inputs[0], mine.calibration,
                                           mine.test_inputs, scratch / entry.name / f"theirs{run}")
            if ours is None:
                ours, theirs, first_layouts = mine, them, layouts
                continue
            _keep_fastest(ours, mine, theirs, them, entry.name)
        if ours is None:
            continue
        print("done", flush=True)
        for npu in npus:
            rows.append(_row(entry.name, npu, ours, theirs[npu], first_layouts))
        _print_rows_so_far(rows[-len(npus):])
    return rows


def _print_rows_so_far(rows: list[dict]) -> None:
    for r in rows:
        print(f"  {r['npu']}: ours {_fmt(r['ours']['cycles_npu'])}, TFLite "
              f"{_fmt(r['theirs']['cycles_npu'])} ({r['theirs']['layout'] or '-'}), "
              f"ours/TFLite {_fmt(ratio(r), '.3f')}", flush=True)


def _keep_fastest(ours, mine, theirs: dict, them: dict, name: str) -> None:
    """Each flow's fastest time; a cycle count that moved between runs is reported."""
    for npu, res in them.items():
        old = theirs[npu]
        if res.figures.get("cycles_npu") != old.figures.get("cycles_npu"):
            print(f"\n  note: {name}/{npu}: their NPU cycles moved between runs "
                  f"({old.figures.get('cycles_npu')} -> {res.figures.get('cycles_npu')})")
        if res.seconds is not None and old.seconds is not None:
            old.seconds = min(old.seconds, res.seconds)
    for npu, figures in mine.figures.items():
        if figures.get("cycles_npu") != ours.figures.get(npu, {}).get("cycles_npu"):
            print(f"\n  note: {name}/{npu}: our NPU cycles moved between runs")

    def total(r) -> float:
        return sum(r.shared_s.values()) + sum(r.per_npu_s.values())

    if not mine.errors and total(mine) < total(ours):
        ours.shared_s, ours.per_npu_s = dict(mine.shared_s), dict(mine.per_npu_s)


def _row(name: str, npu: str, ours, t, layouts: dict) -> dict:
    from benchmarks.vs_executorch.figures import npu_share

    chosen = layouts.get(t.layout)
    if ours is None:  # filled by _recorded_row
        return {"model": name, "npu": npu, "ours": {}, "theirs": _their_cells(t, chosen)}
    figures = ours.figures.get(npu, {})
    error = ours.errors.get(npu) or ours.errors.get("shared")
    return {
        "model": name, "npu": npu,
        "ours": {"cycles_npu": figures.get("cycles_npu"),
                 "cycles_total": figures.get("cycles_total"),
                 "npu_share": npu_share(figures),
                 "aot_s": None if error else sum(ours.shared_s.values())
                 + ours.per_npu_s.get(npu, 0.0),
                 "sqnr_torch_db": ours.sqnr_torch, "verified": ours.verified, "error": error},
        "theirs": _their_cells(t, chosen),
    }


def _their_cells(t, chosen) -> dict:
    return {"cycles_npu": t.figures.get("cycles_npu"),
            "cycles_total": t.figures.get("cycles_total"),
            "npu_share": t.npu_share, "cpu_ops": t.cpu_ops, "layout": t.layout,
            "cpu_op_types": t.cpu_op_types, "by_layout": t.by_layout, "aot_s": t.seconds,
            "sqnr_torch_db": chosen.sqnr_torch if chosen else None,
            "boundary_ops": chosen.boundary_ops if chosen else None,
            "op_types": sorted(set(chosen.op_types)) if chosen else [],
            "error": t.error}


def _fmt(value, spec: str = ",.0f") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return format(value, spec)


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def ratio(row: dict) -> float | None:
    mine, theirs = row["ours"]["cycles_npu"], row["theirs"]["cycles_npu"]
    return mine / theirs if mine and theirs else None


def print_table(rows: list[dict], npus) -> dict:
    """The Markdown table (a row per model and NPU) and the geomean of ours/theirs per NPU."""
    print()
    print("NPU cycles (Vela 5.2.0 estimates, no hardware here): ours, TFLite + Vela "
          "(litert-torch int8, the better input layout), ours/theirs; % of operators on the "
          "NPU (theirs: float-input QUANTIZE and float-output DEQUANTIZE not counted)")
    print()
    print("| model | NPU | ours | TFLite | ours/TFLite | NPU ops ours / TFLite | TFLite layout |")
    print("|---|---|---:|---:|---:|---|---|")
    for r in rows:
        o, t = r["ours"], r["theirs"]
        print(f"| {r['model']} | {r['npu']} | {_fmt(o['cycles_npu'])} | "
              f"{_fmt(t['cycles_npu'])} | {_fmt(ratio(r), '.2f')} | "
              f"{_fmt(o['npu_share'] and 100 * o['npu_share'], '.0f')}% / "
              f"{_fmt(t['npu_share'] and 100 * t['npu_share'], '.0f')}% | "
              f"{t['layout'] or '-'} |")
    print()
    print("their layouts (NPU cycles of each .tflite) and torch SQNR of both quantized programs "
          "vs float over our 4 test inputs")
    print()
    print("| model | NPU | TFLite nchw | TFLite nhwc | SQNR ours / TFLite (dB) |")
    print("|---|---|---:|---:|---|")
    for r in rows:
        o, t = r["ours"], r["theirs"]
        cells = [_fmt(v) if isinstance(v, (int, float)) else "-"
                 for v in (t["by_layout"].get(k) for k in ("nchw", "nhwc"))]
        print(f"| {r['model']} | {r['npu']} | {cells[0]} | {cells[1]} | "
              f"{_fmt(o['sqnr_torch_db'], '.1f')} / {_fmt(t['sqnr_torch_db'], '.1f')} |")
    notes = []
    for r in rows:
        for side in ("ours", "theirs"):
            if r[side]["error"]:
                notes.append(f"{r['model']}/{r['npu']} {side}: {r[side]['error'][:200]}")
        if r["theirs"]["cpu_ops"]:
            notes.append(f"{r['model']}/{r['npu']} TFLite: Vela left "
                         f"{', '.join(r['theirs']['cpu_op_types'])} on the CPU")
        for layout, v in r["theirs"]["by_layout"].items():
            if not isinstance(v, (int, float)) and v and "same graph" not in str(v):
                notes.append(f"{r['model']}/{r['npu']} TFLite {layout}: {str(v)[:200]}")
    for note in dict.fromkeys(notes):
        print(f"- {note}")
    print()
    summary = {}
    for npu in npus:
        mine = [r for r in rows if r["npu"] == npu and ratio(r) is not None]
        full = [r for r in mine if (r["theirs"]["npu_share"] or 0) >= 1.0]
        g, g_full = geomean([ratio(r) for r in mine]), geomean([ratio(r) for r in full])
        worse = [f"{r['model']} ({ratio(r):.2f})" for r in mine if ratio(r) > 1.0]
        summary[npu] = {"geomean": g, "rows": len(mine), "geomean_all_theirs_on_npu": g_full,
                        "rows_all_theirs_on_npu": len(full), "worse_than_theirs": worse}
        met = g_full is not None and g_full <= GOAL_RATIO
        print(f"{npu}: geomean ours/TFLite {_fmt(g_full, '.3f')} over the {len(full)} models where "
              f"every TFLite operator is on the NPU (like for like; goal <= {GOAL_RATIO}: "
              f"{'MET' if met else 'MISSED'}); {_fmt(g, '.3f')} over all {len(mine)}, where "
              "their NPU cycles leave out what Vela put on the CPU"
              + (f"; slower than TFLite on {', '.join(worse)}" if worse else ""))
    return summary
