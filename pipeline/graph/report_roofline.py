"""report.html's roofline section: per model and NPU configuration, each NPU operation's
estimate against its bound (``roofline.json``, ``pipeline/ethosu/roofline.py``) and the
operations that lose the most cycles, named with the model line they came from."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

_COLOURS = {"mac": "#3b75af", "memory": "#e07b39"}


def _plot(layers: list[dict]):
    """Log-log: x the bound, y Vela's estimate; on the diagonal an operation runs at the limit."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(5.5, 4))
    shown = [x for x in layers if x["bound"] > 0 and x["cycles"] > 0]
    for kind, colour in _COLOURS.items():
        group = [x for x in shown if x["bound_by"] == kind]
        if group:
            axes.scatter([x["bound"] for x in group], [x["cycles"] for x in group], s=18,
                         color=colour, label=f"{kind}-bound", zorder=3)
    if shown:
        low = min(min(x["bound"] for x in shown), min(x["cycles"] for x in shown)) / 2
        high = max(x["cycles"] for x in shown) * 2
        for factor, style in ((1, "-"), (2, "--"), (10, ":")):
            axes.plot([low, high / factor], [low * factor, high], style, color="#888",
                      linewidth=0.8, label=f"estimate = {factor}x bound" if factor > 1 else "at the bound")
        axes.set_xlim(low, high)
        axes.set_ylim(low, high)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("bound (cycles): max(MAC bound, memory bound)")
    axes.set_ylabel("Vela's estimate (cycles)")
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize=7, loc="upper left")
    return figure


def _where(source: dict | None) -> str:
    if not source:
        return "<td>not mapped</td>"
    text = f"{Path(source['file']).name}:{source['line']} ({source['code']})"
    return f"<td title='{html.escape(source['file'])}'>{html.escape(text)}</td>"


def _losses(roofline: dict) -> str:
    head = ("<tr><th>layer</th><th>operation</th><th>cycles</th><th>bound</th><th>loss</th>"
            "<th>bound by</th><th>model line</th></tr>")
    rows = "".join(
        f"<tr><td>{html.escape(x['name'])}</td><td>{html.escape(x['operator'])}</td>"
        f"<td class=n>{x['cycles']:,}</td><td class=n>{x['bound']:,.0f}</td>"
        f"<td class=n>{x['loss']:,.0f}</td><td>{x['bound_by']}</td>{_where(x['source'])}</tr>"
        for x in roofline["losses"])
    return f"<table>{head}{rows}</table>"


def roofline_section(caption: str, roofline: dict, svg: Callable | None) -> str:
    """One model on one NPU configuration: the plot (rendered by ``svg``, a matplotlib figure
    to SVG text; None: no plot), the limit line, and the biggest losses with their model
    lines."""
    layers = roofline["mapped_layers"] + roofline["unmapped_layers"]
    notes = [html.escape(roofline["summary"])]
    if roofline["unmapped_layers"]:
        notes.append(f"{roofline['unmapped_layers']} of {layers} operations name no model line "
                     "(Vela made them, or their TOSA operator has no location)")
    title = f"<figcaption>{html.escape(caption)}: {notes[0]}</figcaption>"
    body = svg(_plot(roofline["layers"])) if svg else ""
    extra = "".join(f"<p>{n}</p>" for n in notes[1:])
    return f"<figure>{title}{body}</figure>{extra}<p>Biggest losses:</p>{_losses(roofline)}"
