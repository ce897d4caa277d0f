"""nn.LSTM / nn.GRU unrolled over time before quantization, every step in primitives that lower
to Ethos-U operators: one input projection for the whole sequence (1x1 CONV2D), per step the
recurrent projection (1x1 CONV2D), SLICEs into gates, sigmoid/tanh TABLEs, MULs and ADDs,
and one CONCAT of the per-step outputs.

The weights stay as torch holds them, one matrix per projection, so each gate's rows get
their own per-channel weight scales. Activations are different: an unrolled step is the same
computation T times, and T separate observers would each see one step of a few calibration
samples and clip on new data (an a16w8 LSTM of 8 steps lost 30 dB that way). So every value a
step computes is tagged with its role (``node.meta["custom"]``) and the quantizer gives all
steps of one role one shared set of qparams (``step_group``), observed over every step - the
fixed state scales an LSTM kernel has.
"""

from __future__ import annotations

import weakref
from contextlib import AbstractContextManager

import torch
import torch.nn.functional as F
from torch import fx
from torch.fx.traceback import annotate

ROLE = "ethosu_step"  # node.meta["custom"] key: "<lstm|gru><layer><direction>.<value>"


class _Steps:
    """Tags for the values one layer (and direction) computes at every step."""

    def __init__(self, kind: str, layer: int, reverse: bool):
        self.prefix = f"{kind}{layer}{'r' if reverse else ''}"

    def __call__(self, value: str) -> AbstractContextManager:
        return annotate({ROLE: f"{self.prefix}.{value}"})


def _weights(params, has_biases: bool, per_layer: int) -> list[tuple]:
    """(w_ih, w_hh, b_ih, b_hh, w_hr) per layer and direction from torch's flat list, which
    holds w_ih, w_hh[, b_ih, b_hh][, w_hr (LSTM projection)] for each."""
    result = []
    for start in range(0, len(params), per_layer):
        w_ih, w_hh, *rest = params[start : start + per_layer]
        b_ih, b_hh = (rest.pop(0), rest.pop(0)) if has_biases else (None, None)
        result.append((w_ih, w_hh, b_ih, b_hh, rest[0] if rest else None))
    return result


def _lstm_step(x_t, state, weights, tag: _Steps):
    h, c = state
    _, w_hh, _, b_hh, w_hr = weights
    with tag("hh"):
        recurrent = F.linear(h, w_hh, b_hh)
    with tag("gates"):
        gates = recurrent + x_t
    i, f, g, o = gates.chunk(4, -1)
    with tag("i"):
        i = torch.sigmoid(i)
    with tag("f"):
        f = torch.sigmoid(f)
    with tag("g"):
        g = torch.tanh(g)
    with tag("o"):
        o = torch.sigmoid(o)
    with tag("fc"):
        kept = f * c
    with tag("ig"):
        written = i * g
    with tag("c"):
        c = kept + written
    with tag("tanh_c"):
        squashed = torch.tanh(c)
    with tag("h" if w_hr is not None else "state"):
        h = o * squashed
    if w_hr is not None:
        with tag("state"):
            h = F.linear(h, w_hr)
    return h, (h, c)


def _gru_step(x_t, h, weights, tag: _Steps):
    _, w_hh, _, b_hh, _ = weights
    x_r, x_z, x_n = x_t.chunk(3, -1)
    with tag("hh"):
        recurrent = F.linear(h, w_hh, b_hh)
    h_r, h_z, h_n = recurrent.chunk(3, -1)
    with tag("r_in"):
        r = h_r + x_r
    with tag("r"):
        r = torch.sigmoid(r)
    with tag("z_in"):
        z = h_z + x_z
    with tag("z"):
        z = torch.sigmoid(z)
    with tag("rn"):
        reset = h_n * r
    with tag("n_in"):
        n = x_n + reset
    with tag("n"):
        n = torch.tanh(n)
    with tag("h_minus_n"):
        delta = h - n
    with tag("z_delta"):
        delta = delta * z
    with tag("state"):
        h = delta + n
    return h, h


def _layer(step, x, state, weights, tag: _Steps, time_dim: int, reverse: bool):
    """Run ``step`` over the sequence ``x``; (outputs along ``time_dim``, final state)."""
    w_ih, _, b_ih, _, _ = weights
    projected = F.linear(x, w_ih, b_ih)  # every step's input projection at once
    steps = range(x.shape[time_dim])
    outputs = [None] * len(steps)
    for t in reversed(steps) if reverse else steps:
        out, state = step(projected.select(time_dim, t), state, weights, tag)
        outputs[t] = out
    return torch.stack(outputs, time_dim), state


def _rnn(kind, step, x, hidden, params, has_biases, num_layers, bidirectional, batch_first):
    """The layers of an LSTM/GRU; ``hidden``: per layer and direction, the initial state."""
    time_dim = 1 if batch_first else 0
    directions = 2 if bidirectional else 1
    finals = []
    for layer in range(num_layers):
        outputs = []
        for d in range(directions):
            index = layer * directions + d
            tag = _Steps(kind, layer, d == 1)
            out, final = _layer(
                step, x, hidden[index], params[index], tag, time_dim, reverse=d == 1
            )
            outputs.append(out)
            finals.append(final)
        x = torch.cat(outputs, -1) if bidirectional else outputs[0]
    return x, finals


def lstm(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """aten.lstm.input in eval: (output, h_n, c_n); dropout applies only in training."""
    per_layer = (4 if has_biases else 2) + (hx[0].shape[-1] != hx[1].shape[-1])
    hidden = list(zip(hx[0].unbind(0), hx[1].unbind(0)))
    out, finals = _rnn(
        "lstm", _lstm_step, x, hidden, _weights(params, has_biases, per_layer), has_biases,
        num_layers, bidirectional, batch_first,
    )  # fmt: skip
    return out, torch.stack([h for h, _ in finals]), torch.stack([c for _, c in finals])


def gru(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """aten.gru.input in eval: (output, h_n)."""
    per_layer = 4 if has_biases else 2
    out, finals = _rnn(
        "gru", _gru_step, x, list(hx.unbind(0)), _weights(params, has_biases, per_layer),
        has_biases, num_layers, bidirectional, batch_first,
    )  # fmt: skip
    return out, torch.stack(finals)


def step_group(node: fx.Node) -> str | None:
    """The role of a per-step value (module path + tag), shared by all its steps; else None."""
    tag = (node.meta.get("custom") or {}).get(ROLE)
    if tag is None:
        return None
    stack = node.meta.get("nn_module_stack") or {}
    module = next(reversed(stack.values()))[0] if stack else ""
    return f"{module}:{tag}"


def _firsts(graph: fx.Graph) -> dict[str, fx.Node]:
    """{step group: its first node in graph order}, built once per graph."""
    firsts = _FIRSTS.get(graph)
    if firsts is None:
        firsts = {}
        for node in graph.nodes:
            group = step_group(node) if node.op == "call_function" else None
            if group is not None:
                firsts.setdefault(group, node)
        _FIRSTS[graph] = firsts
    return firsts


def first_of_group(node: fx.Node) -> fx.Node | None:
    """The first node of ``node``'s step group in graph order, if it is another node."""
    group = step_group(node)
    first = _firsts(node.graph).get(group) if group is not None else None
    return None if first is node else first


def initial_state(node: fx.Node) -> tuple[fx.Node, fx.Node] | None:
    """(initial state, first ``state`` of the layer) when ``node`` is the first step's recurrent
    projection fed a state from outside (an ``h0`` input): that state is the same variable as
    the steps' ``state`` and should share its qparams - every step's projection then has the
    same input scale, so the one bias they share is quantized right for all of them."""
    group = step_group(node)
    if group is None or not group.endswith(".hh"):
        return None
    state = node.args[0]
    if not isinstance(state, fx.Node) or step_group(state) is not None:
        return None
    anchor = _firsts(node.graph).get(group[: -len("hh")] + "state")
    return (state, anchor) if anchor is not None else None


# Graph -> {step group: its first node}: built once per graph the quantizer annotates.
_FIRSTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
