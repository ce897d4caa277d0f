"""report.html's precision section: per quantized model, where its precision is lost.

From ``report.json``'s ``quantize.layers`` (``pipeline/quant/layer_sqnr.py``): each quantized
tensor's SQNR against the float network over calibration samples, and its drop from the
lowest SQNR among the quantized tensors it reads. The layers that drop most are listed first;
the whole table, in graph order, folds out below them.
"""

from __future__ import annotations

import html
import json

LOSSES = 8  # layers listed by their drop, before the folded table


def _cell(value, fmt: str = "{:.1f}") -> str:
    if value is None:
        return "<td class=n>exact</td>"
    return f"<td class=n>{html.escape(fmt.format(value))}</td>"


def _row(layer: dict) -> str:
    drop = layer["drop_db"]
    return (f"<tr><td>{html.escape(layer['node'])}</td><td>{html.escape(layer['op'])}</td>"
            + _cell(layer["sqnr_db"])
            + ("<td class=n>-</td>" if drop is None else _cell(drop, "{:.1f}"))
            + f"<td>{html.escape(layer.get('source') or '')}</td></tr>")


_INTRO = ("<h2>Precision per layer (quantize)</h2><p>Each quantized tensor's SQNR against "
          "the float network over calibration samples (torch, q/dq), and its drop from the "
          "lowest SQNR among the quantized tensors it reads: the layers with the largest "
          "drops lose the most precision (docs/quantization.md).</p>")
_HEAD = ("<tr><th>tensor</th><th>op</th><th>SQNR dB</th><th>drop dB</th>"
         "<th>model line</th></tr>")


def precision_section(reports: dict[str, dict]) -> str:
    """The section for ``target -> report.json data``: one table per model and quantization
    (targets that quantized a model the same way share it); "" when no model has layers."""
    seen: dict[str, list[str]] = {}
    found: dict[str, tuple[str, dict]] = {}
    for target, report in reports.items():
        for model, entry in report.get("models", {}).items():
            record = entry.get("quantize") or {}
            if not record.get("layers"):
                continue
            key = json.dumps([model, record], sort_keys=True)
            seen.setdefault(key, []).append(target)
            found.setdefault(key, (model, record))
    if not found:
        return ""
    parts = [_INTRO]
    for key, (model, record) in found.items():
        layers = record["layers"]
        worst = sorted((x for x in layers if x["drop_db"] is not None),
                       key=lambda x: -x["drop_db"])[:LOSSES]
        targets = ", ".join(seen[key])
        caption = (f"{html.escape(model)} ({html.escape(record.get('scheme', ''))}; "
                   f"{html.escape(targets)}): the largest drops")
        parts.append(f"<p><b>{caption}</b></p><table>{_HEAD}{''.join(_row(x) for x in worst)}"
                     f"</table><details><summary>all {len(layers)} quantized tensors, in "
                     f"graph order</summary><table>{_HEAD}{''.join(_row(x) for x in layers)}"
                     "</table></details>")
    return "".join(parts)
