"""``build/report.html``: what a build produced, for people (``report.json`` is for machines).

One self-contained file (inline CSS and SVG, no script, nothing fetched), written from the
targets' ``report.json`` and Vela's per-layer estimates (``vela_per_layer.csv``):

- a table per target and model: verification and SQNR, NPU cycles and time, SRAM and flash
  use, NPU operator share, artifact size;
- per model built for several NPU configurations, inference time side by side (the same
  network on U55 vs U85, or before/after an option change);
- per model and NPU configuration, the layers that cost the most cycles;
- per model and NPU configuration, the roofline: each NPU operation's estimate against its
  bound, total cycles as a multiple of the limit, and the biggest losses with their model
  lines (``report_roofline.py``);
- per quantized model, each quantized tensor's SQNR against float and the layers that lose
  the most precision (``report_precision.py``).

Plots are matplotlib's, rendered to SVG text. Targets with equal figures (same model and NPU
options) share one bar and one per-layer chart, so hundreds of targets stay readable.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import sys
from pathlib import Path

from pipeline.files import write_atomic
from pipeline.graph.report_precision import precision_section

TOP_LAYERS = 10  # bars per per-layer chart (and entries kept in report.json)
MAX_LAYER_CHARTS = 48  # beyond this many, the costliest layers are listed as text
_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:3px 8px}
th{background:#f0f0f0}td.n{text-align:right}.fail{color:#b00;font-weight:bold}
.pass{color:#070}figure{margin:1em 0}figcaption{font-weight:bold}
"""


def top_layers(per_layer_csv: Path, count: int = TOP_LAYERS) -> list[dict]:
    """The ``count`` costliest NPU operations of Vela's per-layer CSV, by estimated cycles.

    Each: ``name`` (Vela's output tensor name, numbered when it repeats), ``operator`` (the
    TOSA operator and the NPU operation it became), ``cycles``, ``share`` (of the network's
    cycles, 0..1) and ``macs``.
    """
    with open(per_layer_csv, newline="") as handle:
        rows = list(csv.DictReader(handle))
    seen: dict[str, int] = {}
    layers = []
    for row in rows:
        name = row["Name"].strip()
        seen[name] = seen.get(name, 0) + 1
        layers.append({
            "name": name if seen[name] == 1 else f"{name} #{seen[name]}",
            "operator": f"{row['Original Operator']} -> {row['NNG Operator']}",
            "cycles": int(float(row["Op Cycles"])),
            "share": float(row["Network% (cycles)"]) / 100,
            "macs": int(float(row["MAC Count"])),
        })
    return sorted(layers, key=lambda layer: -layer["cycles"])[:count]


def _svg(figure) -> str:
    """A matplotlib figure as inline SVG text (no XML prolog, no date: stable bytes)."""
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _barh(labels: list[str], values: list[float], xlabel: str) -> str:
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 0.8 + 0.3 * len(labels)))
    axes.barh(range(len(labels)), values, color="#3b75af")
    axes.set_yticks(range(len(labels)), labels)
    axes.invert_yaxis()  # the first (largest) on top
    axes.set_xlabel(xlabel)
    axes.grid(axis="x", alpha=0.3)
    return _svg(figure)


def _sqnr(entry: dict) -> float:
    values = [o.get("sqnr_db_vs_float") for o in entry["verify"].get("outputs", [])]
    return min((math.inf if v is None else v for v in values), default=math.nan)


def _cell(value, fmt: str = "{}") -> str:
    if value is None or value == "":
        return "<td class=n>-</td>"
    text = value if isinstance(value, str) else fmt.format(value)
    return f"<td class=n>{html.escape(text)}</td>"


def _row(target: str, model: str, report: dict, entry: dict) -> str:
    npu = (report["config"].get("npu") or {}).get("config", "none")
    if "failed" in entry:  # doit --continue wrote the target without it (graph/partial.py)
        failed = entry["failed"] or {}
        error = f"{failed.get('task') or ''}: {failed.get('error') or ''}".strip(": ")
        return ("<tr>" + "".join(f"<td>{html.escape(t)}</td>" for t in (target, model, npu))
                + f"<td class=fail>FAILED</td><td colspan=7>{html.escape(error)}</td></tr>")
    passed = entry["verify"].get("passed")
    vela = entry.get("vela") or {}
    flash = None
    if vela:
        flash = vela["on_chip_flash_memory_used"] + vela["off_chip_flash_memory_used"]
    time_us = vela["inference_time"] * 1e6 if vela else None
    return ("<tr>" + "".join(f"<td>{html.escape(t)}</td>" for t in (target, model, npu))
            + f"<td class={'pass' if passed else 'fail'}>{'pass' if passed else 'FAIL'}</td>"
            + _cell(_sqnr(entry), "{:.1f}") + _cell(vela.get("cycles_total"), "{:,}")
            + _cell(time_us, "{:.1f}") + _cell(vela.get("sram_memory_used"), "{:.1f}")
            + _cell(flash, "{:.1f}") + _cell(vela.get("npu_op_share"), "{:.0%}")
            + _cell((entry.get("roofline") or {}).get("times_limit"), "{:.2f}x")
            + _cell(entry.get("artifact_bytes"), "{:,}") + "</tr>")


def _variants(reports: dict[str, dict], build: Path) -> dict[str, dict[str, dict]]:
    """model -> NPU options (as JSON text) -> {"targets": [...], "entry", "folder"}: targets
    with the same model and NPU options have the same figures."""
    found: dict[str, dict[str, dict]] = {}
    for target, report in reports.items():
        npu = report["config"].get("npu")
        if not npu:
            continue
        for model, entry in report["models"].items():
            if "vela" not in entry:  # a mixed NPU + CPU graph: no one network to compare
                continue
            key = json.dumps(npu, sort_keys=True)
            slot = found.setdefault(model, {}).setdefault(
                key, {"targets": [], "entry": entry, "npu": npu,
                      "layers_csv": build / target / model / "vela_per_layer.csv"})
            slot["targets"].append(target)
    return found


def _label(variant: dict, varying: tuple[str, ...] = ()) -> str:
    """``ethos-u55-128 Size (t1, t2 +3 more)``: the accelerator, the other NPU options that
    tell this variant from the model's others, and the targets that built it."""
    npu, names = variant["npu"], variant["targets"]
    options = "".join(f" {npu[k]}" for k in varying if k != "config")
    more = f" +{len(names) - 2} more" if len(names) > 2 else ""
    return f"{npu['config']}{options} ({', '.join(names[:2])}{more})"


def _varying(variants: dict[str, dict]) -> tuple[str, ...]:
    """The NPU options whose values differ between a model's variants."""
    npus = [v["npu"] for v in variants.values()]
    keys = sorted({k for npu in npus for k in npu})
    return tuple(k for k in keys if len({json.dumps(npu.get(k)) for npu in npus}) > 1)


def _comparison(model: str, variants: dict[str, dict]) -> str:
    if len(variants) < 2:
        return ""
    ordered = sorted(variants.values(), key=lambda v: v["entry"]["vela"]["inference_time"])
    varying = _varying(variants)
    svg = _barh([_label(v, varying) for v in ordered],
                [v["entry"]["vela"]["inference_time"] * 1e6 for v in ordered],
                "inference time (us, Vela's estimate)")
    caption = f"{html.escape(model)}: across NPU configurations"
    return f"<figure><figcaption>{caption}</figcaption>{svg}</figure>"


def _layers(model: str, variant: dict, varying: tuple[str, ...], chart: bool) -> str:
    if not variant["layers_csv"].is_file():
        return ""
    layers = top_layers(variant["layers_csv"])
    caption = f"{html.escape(model)} on {html.escape(_label(variant, varying))}: costliest layers"
    if chart:
        svg = _barh([f"{x['name']} ({x['operator'].split(' -> ')[1]})" for x in layers],
                    [x["share"] * 100 for x in layers], "share of the network's NPU cycles (%)")
        return f"<figure><figcaption>{caption}</figcaption>{svg}</figure>"
    items = "".join(f"<li>{html.escape(x['name'])}: {x['cycles']:,} cycles "
                    f"({x['share']:.1%})</li>" for x in layers)
    return f"<p><b>{caption}</b></p><ol>{items}</ol>"


def _rooflines(variants: dict[str, dict[str, dict]]) -> str:
    from pipeline.graph.report_roofline import roofline_section

    parts = [("<h2>Roofline: Vela's estimates against the NPU's bound</h2><p>Per NPU operation, "
              "the bound is the larger of its MAC bound (MACs / the NPU's peak MACs per cycle, "
              "halved for 16-bit inputs) and its memory bound (bytes / the bandwidth of the "
              "memory they cross); the limit is the sum of the bounds (docs/roofline.md). "
              "Cycles are Vela's estimates: no Ethos-U hardware or FVP ran.</p>")]
    charts = 0
    for model, by_npu in variants.items():
        varying = _varying(by_npu)
        for variant in by_npu.values():
            if "roofline" not in variant["entry"]:
                continue
            caption = f"{model} on {_label(variant, varying)}"
            parts.append(roofline_section(caption, variant["entry"]["roofline"],
                                          _svg if charts < MAX_LAYER_CHARTS else None))
            charts += 1
    return "".join(parts) if charts else ""


def render(reports: dict[str, dict], build: Path) -> str:
    """The report page for ``target -> report.json data`` of the targets under ``build``."""
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot's import
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "ethosu-pipeline",
                                "font.size": 9})
    head = ("<tr><th>target</th><th>model</th><th>NPU</th><th>verified</th><th>SQNR dB</th>"
            "<th>NPU cycles</th><th>time us</th><th>SRAM KiB</th><th>flash KiB</th>"
            "<th>NPU ops</th><th>cycles / limit</th><th>artifact B</th></tr>")
    rows = "".join(_row(t, m, r, e) for t, r in reports.items() for m, e in r["models"].items())
    parts = [f"<h1>Build report</h1><p>{len(reports)} targets.</p><table>{head}{rows}</table>"]
    variants = _variants(reports, build)
    comparisons = "".join(_comparison(m, v) for m, v in variants.items())
    if comparisons:
        parts.append(f"<h2>Across targets</h2>{comparisons}")
    parts.append("<h2>Per-layer NPU cost (Vela's per-layer estimates)</h2>")
    charts = 0
    for model, by_npu in variants.items():
        varying = _varying(by_npu)
        for variant in by_npu.values():
            parts.append(_layers(model, variant, varying, chart=charts < MAX_LAYER_CHARTS))
            charts += 1
    if charts > MAX_LAYER_CHARTS:
        parts.append(f"<p>Charts for the first {MAX_LAYER_CHARTS} of {charts} model and NPU "
                     "configurations; the others are listed.</p>")
    parts.append(_rooflines(variants))
    parts.append(precision_section(reports))
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            "<title>ethosu-pipeline build report</title>"
            f"<style>{_CSS}</style></head><body>{''.join(parts)}</body></html>\n")


def write_report(build: Path, names: list[str], html_path: Path) -> None:
    """Write ``html_path`` from the ``report.json`` of each target in ``names`` that has one
    under ``build`` (those built now and earlier, so targets built apart still compare)."""
    reports = {}
    for name in names:
        path = build / name / "report.json"
        if path.is_file():
            reports[name] = json.loads(path.read_text())
    write_atomic(html_path, render(reports, build).encode(), root=build)


def main(argv: list[str] | None = None) -> int:
    """``python -m pipeline.graph.report_html [BUILD]``: write ``BUILD/report.html`` from
    every ``BUILD/<target>/report.json`` (CI: after the per-target jobs' artifacts are merged)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("build", nargs="?", type=Path, default=Path("build"))
    args = parser.parse_args(argv)
    names = sorted(p.parent.name for p in args.build.glob("*/report.json"))
    if not names:
        print(f"error: {args.build}: must hold <target>/report.json files (a build folder); "
              "got none", file=sys.stderr)
        return 2
    write_report(args.build, names, args.build / "report.html")
    print(f"{args.build / 'report.html'}: {len(names)} targets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
