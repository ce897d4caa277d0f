"""Quantizing a spectral front end (stft -> power -> mel matmul -> log; the stft written in
real operators by ``pipeline/normalise/spectral.py``, whose nodes carry
``meta["custom"]["front_end"]``) so that its log keeps the low-energy bins.

A log-mel's error is the mel power's *relative* error, and speech spans 50-60 dB between its
formant peaks and its noise floor; one uniform int16 scale keeps 5 % relative error only ~32 dB
below the largest power (the power doubles the amplitude's dB range). So the power and the mel
power are each carried at two scales, exactly in float:

    P   = Pf + Pe,  Pf = min(min(re*re, Tp) + min(im*im, Tp), Tp),  Pe = relu(P - Tp)
    m   = mel(Pf) + mel(Pe)                          (the mel matmul and the moves around it
                                                      are linear: each path gets its own copy)
    log m = log(clamp(min(mel(Pf), Tm) + mel(Pe), floor, Tm))
          + log(max(mel(Pf) + mel(Pe), Tm)) - log(Tm)

(``min(mel(Pf), Tm)``: where it clamps, the first term is Tm either way; it gives the fine
path's matmul an output scale of its own.)

``T = max / 256`` of what the calibration samples reach. Every fine tensor comes from a producer
of its own (MUL, ADD, the matmul) with the clamp fused into it, so its observer sees only the
fine range; a ``log(m + eps)`` or ``log(clamp(m, min=eps))`` takes ``floor = max(eps, Tm / 32767)``
(the difference from ``log(m + eps)`` is below one step of the fine scale).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import fx
from torch._guards import detect_fake_mode

aten = torch.ops.aten
TAG = "front_end"
RATIO = 256.0  # fine scale = coarse / RATIO (1024 or 4096 for the power measured no better)
LOGS = {aten.log.default: math.log, aten.log10.default: math.log10, aten.log2.default: math.log2}
MOVES = {aten.transpose.int, aten.permute.default, aten.reshape.default, aten.view.default,
         aten.slice.Tensor, aten.select.int, aten.unsqueeze.default, aten.squeeze.dim,
         aten.squeeze.dims, aten.clone.default, aten.t.default}
PRODUCTS = {aten.matmul.default, aten.mm.default, aten.linear.default, aten.bmm.default}


def is_front_end(node: fx.Node) -> bool:
    return bool((node.meta.get("custom") or {}).get(TAG))


def _is_square(node) -> bool:
    """``x * x`` or ``x ** 2`` of a front-end value (``ri[..., 0] ** 2`` as users write it)."""
    if not isinstance(node, fx.Node) or node.op != "call_function" or not node.args:
        return False
    if not isinstance(node.args[0], fx.Node):
        return False
    square = (node.target == aten.mul.Tensor and node.args[0] is node.args[1]) or (
        node.target == aten.pow.Tensor_Scalar and node.args[1] == 2)
    return square and is_front_end(node.args[0])


def _powers(gm: fx.GraphModule) -> list[fx.Node]:
    """``re*re + im*im`` of front-end values."""
    return [n for n in gm.graph.nodes if n.target == aten.add.Tensor and len(n.args) >= 2
            and all(_is_square(a) for a in n.args[:2])]


def _single_user(node: fx.Node) -> fx.Node | None:
    return next(iter(node.users)) if len(node.users) == 1 else None


def _chain(power: fx.Node, log_needed: bool = True):
    """(moves before the mel product, the product, moves after it, the eps node or None, eps,
    the log) from ``power``, or None when it does not reach a log that way (without
    ``log_needed``: the log None where there is none)."""
    before, node = [], _single_user(power)
    while node is not None and node.target in MOVES and node.args[0] is (before or [power])[-1]:
        before.append(node)
        node = _single_user(node)
    if node is None or node.target not in PRODUCTS:
        return None
    product, after = node, []
    node = _single_user(product)
    while node is not None and node.target in MOVES and node.args[0] is ([product] + after)[-1]:
        after.append(node)
        node = _single_user(node)
    eps_node, eps = None, 0.0
    if node is not None and node.target == aten.add.Tensor and isinstance(node.args[1], float):
        eps_node, eps, node = node, node.args[1], _single_user(node)
    elif node is not None and node.target == aten.clamp.default and len(node.args) == 2:
        eps_node, eps, node = node, float(node.args[1]), _single_user(node)
    if node is None or node.target not in LOGS or eps < 0:
        return None if log_needed else (before, product, after, None, 0.0, None)
    return before, product, after, eps_node, eps, node


def _maxima(gm: fx.GraphModule, nodes: list[fx.Node], samples: Sequence) -> dict:
    """The largest value each of ``nodes`` takes over the samples."""
    wanted = set(nodes)
    top = dict.fromkeys(nodes, 0.0)

    class Record(fx.Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            if n in wanted:
                top[n] = max(top[n], float(value.detach().max()))
            return value

    with torch.no_grad():
        for sample in samples:
            Record(gm).run(*sample)
    return top


class _Builder:
    """Adds front-end nodes with the fake values and stack trace the quantizer expects."""

    def __init__(self, graph: fx.Graph, anchor: fx.Node):
        self.graph, self.anchor = graph, anchor
        self.fake = detect_fake_mode([n.meta.get("val") for n in graph.nodes])

    def __call__(self, target, *args) -> fx.Node:
        with self.graph.inserting_before(self.anchor):
            node = self.graph.call_function(target, args)
        node.meta["stack_trace"] = self.anchor.meta.get("stack_trace")
        node.meta["custom"] = {TAG: True}
        vals = fx.node.map_arg(args, lambda a: a.meta["val"])
        with self.fake or torch.no_grad():
            node.meta["val"] = target(*vals)
        return node

    def copy(self, node: fx.Node, replace: dict) -> fx.Node:
        args = fx.node.map_arg(node.args, lambda a: replace.get(a, a))
        return self(node.target, *args)


def _path(build: _Builder, start: fx.Node, power, before, product, after,
          clamp: float | None = None) -> fx.Node:
    """``start`` in place of ``power`` through the moves and the product; with ``clamp``,
    the product's output clamped to it (fused into the product: its own fine scale)."""
    value, previous = start, power
    for node in [*before, product, *after]:
        if node is product and _left_constant(node, previous):
            value = _weight_right(build, node, value, clamp)
        else:
            value = build.copy(node, {previous: value})
            if node is product and clamp is not None:
                value = build(aten.clamp.default, value, None, clamp)
        previous = node
    return value


def _left_constant(node: fx.Node, path: fx.Node) -> bool:
    """``W @ x`` (Whisper's ``filters @ magnitudes``) with a 2-D constant W."""
    w = node.args[0]
    return (node.target == aten.matmul.default and node.args[1] is path
            and isinstance(w, fx.Node) and w.op == "get_attr"
            and getattr(w.meta.get("val"), "ndim", 0) == 2)


def _weight_right(build: _Builder, node: fx.Node, x: fx.Node, clamp) -> fx.Node:
    """``W @ x`` as ``(x^T @ W^T)^T``: a linear layer with int8 weights (an int16 MATMUL of
    two activations is not one Ethos-U55 runs)."""
    gm = build.graph.owning_module
    name = f"{str(node.args[0].target).replace('.', '_')}_t"
    if not hasattr(gm, name):
        gm.register_buffer(name, _attr(gm, node.args[0]).detach().t().contiguous())
    with build.graph.inserting_before(build.anchor):
        weight = build.graph.get_attr(name)
    value = _attr(gm, weight)
    weight.meta["val"] = build.fake.from_tensor(value) if build.fake else value
    product = build(aten.matmul.default, build(aten.transpose.int, x, -1, -2), weight)
    if clamp is not None:
        product = build(aten.clamp.default, product, None, clamp)
    return build(aten.transpose.int, product, -1, -2)


PRODUCERS = {aten.conv1d.default, aten.linear.default}


def _attr(gm: fx.GraphModule, node: fx.Node):
    value = gm
    for part in str(node.target).split("."):
        value = getattr(value, part)
    return value


def _split_weights(gm: fx.GraphModule) -> int:
    """Each front-end CONV1D / linear layer ``x * W`` as ``x * W_hi + x * W_lo``: ``W_hi`` is
    W on the int8 per-channel grid (quantized exactly), ``W_lo`` the rest at a scale of its
    own, so the DFT kernel is good to ~16 bits: with W in int8 alone its rounding leaks every
    frame's strong bins into the others ~46 dB down, above a speech noise floor."""
    split = 0
    for node in list(gm.graph.nodes):
        if node.target not in PRODUCERS or not is_front_end(node):
            continue  # the mel / DCT products: splitting them measured no better, and slower
        weight = node.args[1]
        if not (isinstance(weight, fx.Node) and weight.op == "get_attr"):
            continue
        w = _attr(gm, weight).detach()
        scale = w.abs().amax(dim=tuple(range(1, w.dim())), keepdim=True) / 127
        hi = torch.where(scale > 0, torch.round(w / scale.clamp(min=1e-30)) * scale,
                         torch.zeros_like(w))
        build = _Builder(gm.graph, node)
        terms = []
        for suffix, value in (("hi", hi), ("lo", w - hi)):
            name = f"{weight.target.replace('.', '_')}_{suffix}"
            gm.register_buffer(name, value.contiguous())
            with gm.graph.inserting_before(node):
                attr = gm.graph.get_attr(name)
            attr.meta["val"] = build.fake.from_tensor(value) if build.fake else value
            args = list(node.args)
            args[1] = attr
            if suffix == "lo" and len(args) > 2:
                args[2] = None
            terms.append(build(node.target, *args))
        node.replace_all_uses_with(build(aten.add.Tensor, *terms))
        gm.graph.erase_node(node)
        split += 1
    return split


def split_front_ends(gm: fx.GraphModule, samples: Sequence) -> list[dict]:
    """Carry each front end's power and mel power at two scales (module docstring), in
    place; returns what was split (node names and thresholds) for quantize.json."""
    chains = [(p, c) for p in _powers(gm) if (c := _chain(p)) is not None]
    if not chains:
        return []
    mels = [c[2][-1] if c[2] else c[1] for _, c in chains]
    top = _maxima(gm, [p for p, _ in chains] + mels, samples)
    done = []
    for (power, (before, product, after, eps_node, eps, log)), mel in zip(chains, mels):
        tp, tm = top[power] / RATIO, top[mel] / RATIO
        if tp <= 0 or tm <= 0:
            continue
        build = _Builder(gm.graph, log)
        squares = [build(aten.clamp.default, build(aten.mul.Tensor, x.args[0], x.args[0]), None,
                         tp) for x in power.args[:2]]
        fine = build(aten.clamp.default, build(aten.add.Tensor, *squares), None, tp)
        excess = build(aten.relu.default, build(aten.sub.Tensor, power, tp))
        chain = (power, before, product, after)
        m_fine = _path(build, fine, *chain, clamp=tm)
        m_rest = _path(build, fine, *chain)
        m_excess = _path(build, excess, *chain)
        floor = max(eps, tm / 32767)
        low = build(aten.clamp.default, build(aten.add.Tensor, m_fine, m_excess), floor, tm)
        high = build(aten.clamp.default, build(aten.add.Tensor, m_excess, m_rest), tm)
        total = build(aten.add.Tensor, build(log.target, low), build(log.target, high))
        out = build(aten.sub.Tensor, total, LOGS[log.target](tm))
        log.replace_all_uses_with(out)
        for node in _tail(out, set()):  # MFCC's DCT: in the region, its weights split too
            node.meta["custom"] = {**(node.meta.get("custom") or {}), TAG: True}
        done.append({"log": log.name, "output": out.name, "power_threshold": tp,
                     "mel_threshold": tm})
    if done:
        done[0]["split_weights"] = _split_weights(gm)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return done


def _values(gm: fx.GraphModule, names: set[str], samples: Sequence) -> dict:
    """Each named node's value for every sample."""
    out: dict = {name: [] for name in names}

    class Record(fx.Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            if n.name in out:
                out[n.name].append(value.detach())
            return value

    with torch.no_grad():
        for sample in samples:
            Record(gm).run(*sample)
    return out


def front_end_record(split: list[dict], reference: fx.GraphModule, converted: fx.GraphModule,
                     samples: Sequence) -> dict:
    """What ``split_front_ends`` did and each front end's SQNR (dB): its log in the converted
    (q/dq) module against the float program's, over ``samples``."""
    floats = _values(reference, {s["log"] for s in split}, samples)
    quants = _values(converted, {s["output"] for s in split}, samples)
    entries = []
    for entry in split:
        ref, est = floats[entry["log"]], quants[entry["output"]]
        signal = sum(float((r.double() ** 2).sum()) for r in ref)
        noise = sum(float(((r.double() - e.double()) ** 2).sum()) for r, e in zip(ref, est))
        sqnr = None if not ref or noise == 0 else round(10 * math.log10(signal / noise), 2)
        entries.append({**entry, "sqnr_db": sqnr})
    return {"scheme": "a16w8", "logs": entries}


def front_end_names(gm: fx.GraphModule) -> list[str]:
    """The names of the front end's compute nodes (Vela's per-layer rows are named after
    them), in graph order."""
    return [n.name for n in gm.graph.nodes if n.op == "call_function" and is_front_end(n)]


def front_end_nodes(gm: fx.GraphModule) -> set[fx.Node]:
    """The front-end region: the tagged nodes (spectral.py's, and those ``split_front_ends``
    adds), and from them the moves, mel product, eps and log up to and including the log."""
    region = {n for n in gm.graph.nodes if n.op == "call_function" and is_front_end(n)}
    for power in _powers(gm):
        region |= {power, *power.args[:2]}
        chain = _chain(power, log_needed=False)
        if chain is not None:
            before, product, after, eps_node, _, log = chain
            region |= {*before, product, *after} | {n for n in (eps_node, log) if n}
    for node in [n for n in region if n.target in LOGS or n.target == aten.sub.Tensor]:
        region |= _tail(node, region)
    return region


SCALINGS = {aten.mul.Tensor, aten.div.Tensor, aten.add.Tensor, aten.sub.Tensor}


def _tail(node: fx.Node, region: set) -> set:
    """What a front end does to its log before the network reads it, one reader after the
    other: scaling by constants (MFCC's ``10 *``), moves, and a product with a constant
    matrix (MFCC's DCT, ``db @ dct``); an ``nn.Linear`` classifier is the network's."""
    tail = set()
    while (user := _single_user(node)) is not None and user not in region:
        scaling = user.target in SCALINGS and not isinstance(user.args[1], fx.Node)
        move = user.target in MOVES and user.args[0] is node
        constant = [a for a in user.args[:2] if isinstance(a, fx.Node) and a.op == "get_attr"]
        val = constant[0].meta.get("val") if constant else None
        matrix = user.target == aten.matmul.default and val is not None and val.dim() == 2
        if not (scaling or move or matrix):
            break
        tail.add(user)
        node = user
    return tail


__all__ = ["front_end_names", "front_end_nodes", "front_end_record", "is_front_end",
           "split_front_ends"]
