"""Per-layer SQNR: where a quantized network loses its precision.

For each tensor the converted (q/dq) module quantizes, its dequantized value is compared with
the same node's value in the float module, over the first ``SAMPLES`` calibration samples (the figure settles well before; each costs a
run of both modules through an interpreter): the SQNR of every error made up to that point. ``drop_db`` is how much lower it is than the lowest SQNR among
the quantized tensors the layer reads (a network input's counts as its own quantization):
the layers with the largest drops are where precision is lost, whatever came before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import fx

from pipeline.fx import source_of

SAMPLES = 8
QUANTIZE = "quantized_decomposed.quantize_per_tensor"
DEQUANTIZE = "quantized_decomposed.dequantize_per_tensor"


class _Recorder(fx.Interpreter):
    """Runs a module and keeps the float64 value of each node named in ``wanted``."""

    def __init__(self, module: fx.GraphModule, wanted: set[str]):
        super().__init__(module)
        self.wanted = wanted
        self.values: dict[str, torch.Tensor] = {}

    def run_node(self, node):
        result = super().run_node(node)
        if node.name in self.wanted and isinstance(result, torch.Tensor):
            self.values[node.name] = result.detach().double()
        return result


def _quantized_tensors(converted: fx.GraphModule) -> dict[str, fx.Node]:
    """Name of each quantized activation's producer -> its quantize node (weights, whose
    quantize nodes convert folded away, and constants are not activations)."""
    found = {}
    for node in converted.graph.nodes:
        if node.op == "call_function" and str(node.target).startswith(QUANTIZE):
            source = node.args[0]
            if isinstance(source, fx.Node) and source.op in ("call_function", "placeholder"):
                found.setdefault(source.name, node)
    return found


def _upstream(node: fx.Node) -> list[str]:
    """The producers of the quantized tensors ``node`` reads: through their dequantize, past
    the float nodes between (a conv fused with its relu has no quantize of its own)."""
    names, stack, seen = [], list(node.all_input_nodes), set()
    while stack:
        arg = stack.pop()
        if arg in seen or arg.op != "call_function":
            continue
        seen.add(arg)
        if str(arg.target).startswith(DEQUANTIZE):
            q = arg.args[0]
            if (isinstance(q, fx.Node) and str(q.target).startswith(QUANTIZE)
                    and isinstance(q.args[0], fx.Node)):
                names.append(q.args[0].name)
        elif not str(arg.target).startswith(QUANTIZE):
            stack.extend(arg.all_input_nodes)
    return names


def _dequantized(q: fx.Node, value: torch.Tensor) -> torch.Tensor:
    """``value`` through the quantize node ``q``'s grid (its scale, zero point and range)."""
    scale, zero_point, qmin, qmax = (float(a) if not isinstance(a, torch.Tensor) else
                                     float(a.reshape(-1)[0]) for a in q.args[1:5])
    codes = torch.clamp(torch.round(value / scale) + zero_point, qmin, qmax)
    return (codes - zero_point) * scale


def layer_sqnr(float_module: fx.GraphModule, converted: fx.GraphModule,
               samples: Sequence[tuple]) -> list[dict]:
    """Per quantized tensor of ``converted``, in graph order: ``node`` (the float graph's
    name), ``op``, ``source`` (model line), ``sqnr_db`` against ``float_module``'s same node
    over the first ``SAMPLES`` of ``samples`` (None: no error at all) and ``drop_db``. A node the float module lacks
    by that name (a node the rewrites added) is left out."""
    tensors = _quantized_tensors(converted)
    float_names = {n.name for n in float_module.graph.nodes}
    tensors = {name: q for name, q in tensors.items() if name in float_names}
    signal = dict.fromkeys(tensors, 0.0)
    noise = dict.fromkeys(tensors, 0.0)
    with torch.no_grad():
        for sample in samples[:SAMPLES]:
            reference = _Recorder(float_module, set(tensors))
            reference.run(*sample)
            quantized = _Recorder(converted, set(tensors))
            quantized.run(*sample)
            for name, q in tensors.items():
                ref, got = reference.values.get(name), quantized.values.get(name)
                if ref is None or got is None or ref.shape != got.shape:
                    continue
                ok = torch.isfinite(ref) & torch.isfinite(got)
                ref, got = ref[ok], _dequantized(q, got[ok])
                signal[name] += float((ref**2).sum())
                noise[name] += float(((ref - got) ** 2).sum())
    sqnr = {name: None if noise[name] == 0 else
            round(10 * math.log10(max(signal[name], 1e-300) / noise[name]), 2)
            for name in tensors}
    layers = []
    for name, q in tensors.items():
        producer = q.args[0]
        before = [sqnr[n] for n in _upstream(producer) if n in sqnr]
        before = [math.inf if v is None else v for v in before]
        own = math.inf if sqnr[name] is None else sqnr[name]
        drop = (round(min(before) - own, 2)
                if before and math.isfinite(min(before)) and math.isfinite(own) else None)
        layers.append({"node": name, "op": _op(producer), "source": source_of(producer),
                       "sqnr_db": sqnr[name], "drop_db": drop})
    return layers


def _op(node: fx.Node) -> str:
    if node.op == "placeholder":
        return "input"
    parts = str(node.target).split(".")
    return parts[1] if parts[0] == "aten" and len(parts) > 1 else str(node.target)
