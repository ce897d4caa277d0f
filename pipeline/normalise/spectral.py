"""Spectral front ends (``torch.stft``, ``torch.fft.rfft``/``fft`` of real input) in real
operators, before quantization: a real-input DFT is a product with constant cos/sin matrices.

A complex value has no TOSA form, so the complex region is rewritten as a whole: every
complex value it holds becomes a pair (real part, imaginary part) of real tensors, and each
reader of a complex value is replaced by what it computes from the pair:

- ``stft``: the signal cut into blocks of ``g = gcd(n_fft, hop)`` samples, as a CONV1D with
  ``g`` input channels, ``n_fft / g`` taps and stride ``hop / g``, whose ``2 * bins`` output
  channels are the window times cos and -sin (window, ``win_length`` padding and
  ``normalized`` folded into the constant kernel); one operator, any hop, channels instead
  of a kernel ``n_fft`` wide;
- ``center=True`` (torch pads before ``aten.stft``): a constant pad stays a PAD; a reflect pad
  is folded into the frames it reaches: each of those frames is the same product over the
  signal's first / last ``n_fft`` samples with the reflection folded into its kernel
  (one FULLY_CONNECTED per edge instead of ``n_fft`` one-sample slices);
- ``fft_rfft`` / ``fft_fft`` of a real tensor: a linear layer over the transformed dimension;
- ``abs(z)``: sqrt(re*re + im*im); ``abs(z).pow(2)`` (and ``abs(z) ** 2``): re*re + im*im,
  no square root; ``view_as_real(z)``: the pair stacked last; ``z.real``/``z.imag``: one of
  the pair; ``view_as_complex(t)``: the pair from ``t``'s last dimension.

Every node made here is tagged ``meta["custom"]["front_end"]`` (the quantizer's front-end
region starts there, ``pipeline/quant/front_end.py``). A complex value read any other way is
left as it is and the lowering names it.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import fx
from torch.export import ExportedProgram

from pipeline.normalise.constants import add_constant

aten = torch.ops.aten

PRODUCERS = {aten.stft.default, aten.fft_rfft.default, aten.fft_fft.default,
             aten.view_as_complex.default}
TAG = "front_end"


def _is_complex(node) -> bool:
    val = node.meta.get("val") if isinstance(node, fx.Node) else None
    return isinstance(val, torch.Tensor) and val.is_complex()


def spectral_nodes(gm: fx.GraphModule) -> list[fx.Node]:
    """The calls that make a complex value from a real one (or stft's real form)."""
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target in PRODUCERS
            and not _is_complex(n.args[0])]


# ---- the real forms (traced by the re-trace that follows) ---------------------------------

def _dft_basis(n: int, bins: int) -> np.ndarray:
    """[2 * bins, n]: cos rows then -sin rows of the DFT of length n (float64; the angle
    reduced mod n first, so long transforms stay exact)."""
    k = np.arange(bins)[:, None]
    angle = 2 * np.pi * ((k * np.arange(n)[None]) % n) / n
    return np.concatenate([np.cos(angle), -np.sin(angle)])


def _window(window, n_fft: int, win_length: int | None):
    """The window zero-padded to n_fft (centred, as stft pads it); None when none is given
    and win_length is n_fft (a rectangular window: the basis alone)."""
    length = win_length or n_fft
    if window is None and length == n_fft:
        return None
    left = (n_fft - length) // 2
    if window is None:
        window = torch.ones(length)
    return torch.nn.functional.pad(window, (left, n_fft - length - left))


def _kernel(basis, window, n_fft, win_length, normalized) -> torch.Tensor:
    """[2 * bins, n_fft]: window x (cos | -sin), scaled by n_fft^-1/2 if normalized
    (computed from the window buffer and constants: normalisation folds it to a constant)."""
    window = _window(window, n_fft, win_length)
    kernel = basis if window is None else basis * window
    return kernel * (1 / math.sqrt(n_fft)) if normalized else kernel


def _frames_conv(x, kernel, n_fft: int, hop: int) -> torch.Tensor:
    """[B, 2 * bins, T]: every hop-th frame of x [B, L] times the kernel, as one CONV1D over
    blocks of gcd(n_fft, hop) samples (channels), so the kernel is n_fft / g taps long."""
    g = math.gcd(n_fft, hop)
    frames = 1 + (x.shape[-1] - n_fft) // hop
    used = (frames - 1) * hop + n_fft
    blocks = x[:, :used].reshape(x.shape[0], used // g, g).permute(0, 2, 1)
    weight = kernel.reshape(kernel.shape[0], n_fft // g, g).permute(0, 2, 1)
    return torch.nn.functional.conv1d(blocks, weight, stride=hop // g)


def _reflect_index(i: int, length: int) -> int:
    return -i if i < 0 else (2 * (length - 1) - i if i >= length else i)


def edge_frames(n_fft: int, hop: int, pad: int, length: int) -> tuple[list, list]:
    """The frames of a signal of ``length`` reflect-padded by ``pad`` that start in the left
    padding, and those that end in the right one."""
    total = 1 + (length + 2 * pad - n_fft) // hop
    left = [t for t in range(total) if t * hop < pad]
    right = [t for t in range(total) if t * hop + n_fft > pad + length and t not in left]
    return left, right


def edge_moves(frames: list, n_fft: int, hop: int, pad: int, length: int,
               base: int) -> np.ndarray:
    """[frames, n_fft, n_fft]: 1 where frame position j reads signal sample base + m."""
    moves = np.zeros((len(frames), n_fft, n_fft))
    for f, t in enumerate(frames):
        for j in range(n_fft):
            moves[f, j, _reflect_index(t * hop - pad + j, length) - base] = 1
    return moves


def stft_pair(x, basis, n_fft, hop=None, win_length=None, window=None, normalized=False,
              onesided=None, reflect_pad=0, left=None, right=None):
    """(re, im), each [B, bins, T] (or [bins, T] for a 1-D signal), of stft(x, ...) given the
    DFT ``basis`` [2 * bins, n_fft]; with ``reflect_pad``, of x reflect-padded by that much on
    both sides (torch's center=True), ``left``/``right`` the edge frames' moves
    (``edge_moves``)."""
    hop = hop or n_fft // 4
    batched = x.dim() == 2
    x = x if batched else x.unsqueeze(0)
    kernel = _kernel(basis, window, n_fft, win_length, normalized)
    bins = kernel.shape[0] // 2
    if reflect_pad:
        spec = _reflect_frames(x, kernel, n_fft, hop, reflect_pad, left, right)
    else:
        spec = _frames_conv(x, kernel, n_fft, hop)
    re, im = spec[:, :bins], spec[:, bins:]
    return (re, im) if batched else (re.squeeze(0), im.squeeze(0))


def _reflect_frames(x, kernel, n_fft, hop, pad, left, right):
    """[B, 2 * bins, T] of the reflect-padded signal without materialising the padding: the
    frames inside the signal as the block CONV1D, those reaching the padding as a linear
    layer over the signal's edge with the reflection folded into the kernel."""
    length = x.shape[-1]
    lefts, rights = edge_frames(n_fft, hop, pad, length)
    inner = [t for t in range(len(lefts), 1 + (length + 2 * pad - n_fft) // hop)
             if t not in rights]
    pieces = [_edge(x[:, :n_fft], kernel, left)] if lefts else []
    if inner:
        start = inner[0] * hop - pad
        pieces.append(_frames_conv(x[:, start:start + (len(inner) - 1) * hop + n_fft], kernel,
                                   n_fft, hop))
    if rights:
        pieces.append(_edge(x[:, length - n_fft:], kernel, right))
    return torch.cat(pieces, -1) if len(pieces) > 1 else pieces[0]


def _edge(edge, kernel, moves):
    """[B, 2 * bins, frames]: each edge frame's kernel (its reflection folded in: a constant
    after normalisation) applied to the signal's edge [B, n_fft] as one linear layer."""
    folded = torch.einsum("cn,fnm->fcm", kernel, moves)
    frames, channels = folded.shape[:2]
    out = torch.nn.functional.linear(edge, folded.reshape(frames * channels, -1))
    return out.reshape(edge.shape[0], frames, channels).permute(0, 2, 1)


def fft_pair(x, basis, n=None, dim=-1):
    """(re, im) of torch.fft.rfft / fft of a real x along ``dim`` given the scaled DFT
    ``basis`` [2 * bins, n]."""
    dim = dim % x.dim()
    length = x.shape[dim]
    n = n or length
    if n != length:
        moved = x.movedim(dim, -1)
        moved = moved[..., :n] if n < length else torch.nn.functional.pad(moved, (0, n - length))
        x = moved.movedim(-1, dim)
    bins = basis.shape[0] // 2
    y = torch.nn.functional.linear(x.movedim(dim, -1), basis)
    return y[..., :bins].movedim(-1, dim), y[..., bins:].movedim(-1, dim)


def complex_pair(t):
    return t[..., 0], t[..., 1]


def magnitude(pair):
    return torch.sqrt(power(pair))


def power(pair):
    return pair[0] * pair[0] + pair[1] * pair[1]


def stacked(pair):
    return torch.stack(list(pair), -1)


def part(pair, index: int):
    return pair[index]


def moved(pair, op, *args):
    """A slice, transpose, reshape... of a complex value: the same move of each part."""
    return op(pair[0], *args), op(pair[1], *args)


# Movement of a complex value that applies to its two parts alike (whisper: ``stft[..., :-1]``).
MOVES = {aten.slice.Tensor, aten.select.int, aten.transpose.int, aten.permute.default,
         aten.view.default, aten.reshape.default, aten.unsqueeze.default,
         aten.squeeze.dim, aten.squeeze.dims, aten.narrow.default}


# ---- the graph rewrite ------------------------------------------------------------------

def _stft_input(node: fx.Node):
    """(signal, reflect padding) of stft's input: torch.stft's own ``view -> pad(reflect) ->
    view`` of center=True is taken off (folded into the edge frames)."""
    x = node.args[0]
    if x.target in (aten.view.default, aten.reshape.default) and len(x.users) == 1:
        pad = x.args[0]
        if (pad.target == aten.pad.default and len(pad.users) == 1 and len(pad.args) > 2
                and pad.args[2] == "reflect" and pad.args[1][0] == pad.args[1][1]):
            inner = pad.args[0]
            if inner.target in (aten.view.default, aten.reshape.default):
                source = inner.args[0]
                if tuple(source.meta["val"].shape) == tuple(x.meta["val"].shape[:-1]) + (
                        x.meta["val"].shape[-1] - 2 * pad.args[1][0],):
                    return source, int(pad.args[1][0])
    return x, 0


def _constant(program, name: str, value: np.ndarray) -> fx.Node:
    return add_constant(program, name, torch.tensor(value, dtype=torch.float32))


def _stft_call(program, graph: fx.Graph, node: fx.Node) -> fx.Node:
    names = ("n_fft", "hop", "win_length", "window", "normalized", "onesided")
    options = dict(zip(names, node.args[1:7]))
    options.update({k: v for k, v in node.kwargs.items() if k in names})
    n_fft = options["n_fft"]
    hop = options.get("hop") or n_fft // 4
    onesided = options.get("onesided")
    bins = n_fft // 2 + 1 if onesided in (None, True) else n_fft
    signal, pad = _stft_input(node)
    length = signal.meta["val"].shape[-1]
    if pad and length >= 2 * n_fft:
        lefts, rights = edge_frames(n_fft, hop, pad, length)
        options["left"] = _constant(program, "stft_left", edge_moves(
            lefts, n_fft, hop, pad, length, 0)) if lefts else None
        options["right"] = _constant(program, "stft_right", edge_moves(
            rights, n_fft, hop, pad, length, length - n_fft)) if rights else None
        options["reflect_pad"] = pad
    else:
        signal = node.args[0]  # a short signal: its padding as it is (padding.py)
    options.pop("onesided", None)
    basis = _constant(program, "stft_basis", _dft_basis(n_fft, bins))
    with graph.inserting_before(node):
        return graph.call_function(stft_pair, (signal, basis), options)


def _producer_call(program, node: fx.Node) -> fx.Node:
    graph = program.graph_module.graph
    if node.target == aten.stft.default:
        return _stft_call(program, graph, node)
    if node.target == aten.view_as_complex.default:
        with graph.inserting_before(node):
            return graph.call_function(complex_pair, (node.args[0],))
    args = dict(zip(("n", "dim", "norm"), node.args[1:]), **node.kwargs)
    x = node.args[0]
    n = args.get("n") or x.meta["val"].shape[args.get("dim", -1)]
    bins = n // 2 + 1 if node.target == aten.fft_rfft.default else n
    norm = args.pop("norm", None)
    scale = {None: 1.0, "backward": 1.0, "ortho": 1 / math.sqrt(n), "forward": 1 / n}[norm]
    basis = _constant(program, "dft_basis", _dft_basis(n, bins) * scale)
    with graph.inserting_before(node):
        return graph.call_function(fft_pair, (x, basis), args)


def _tag(node: fx.Node, source: fx.Node) -> None:
    for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
        if key in source.meta:
            node.meta[key] = source.meta[key]
    node.meta["custom"] = {**source.meta.get("custom", {}), TAG: True}


def _replace(graph: fx.Graph, node: fx.Node, fn, args, source: fx.Node) -> None:
    with graph.inserting_before(node):
        new = graph.call_function(fn, args)
    _tag(new, source)
    node.replace_all_uses_with(new)
    graph.erase_node(node)


def _rewrite_readers(graph: fx.Graph, value: fx.Node, pair: fx.Node) -> None:
    """Replace each reader of the complex ``value`` by its real form over ``pair``."""
    for user in list(value.users):
        if user.target == aten.abs.default:
            squares = [u for u in user.users if u.target == aten.pow.Tensor_Scalar
                       and u.args[1] == 2]
            for square in squares:
                _replace(graph, square, power, (pair,), user)
            if user.users:
                _replace(graph, user, magnitude, (pair,), user)
            else:
                graph.erase_node(user)
        elif user.target in (aten.view_as_real.default, aten.view_as_real_copy.default):
            last = user.meta["val"].dim() - 1
            parts = [u for u in user.users
                     if u.target == aten.select.int and u.args[1] % (last + 1) == last]
            for p in parts:
                _replace(graph, p, part, (pair, int(p.args[2])), user)
            if user.users:
                _replace(graph, user, stacked, (pair,), user)
            else:
                graph.erase_node(user)
        elif user.target in MOVES and user.args[0] is value:
            with graph.inserting_before(user):
                inner = graph.call_function(moved, (pair, user.target, *user.args[1:]))
            _tag(inner, user)
            _rewrite_readers(graph, user, inner)
            if not user.users:
                graph.erase_node(user)
        elif user.target in (aten.real.default, aten.imag.default):
            _replace(graph, user, part, (pair, 0 if user.target == aten.real.default else 1),
                     user)


def rewrite_spectra(program: ExportedProgram) -> int:
    """Rewrite every spectral call and its complex readers in real form (in place); returns
    how many calls. Needs a re-trace afterwards (the new nodes call Python functions)."""
    gm = program.graph_module
    graph = gm.graph
    nodes = spectral_nodes(gm)
    for node in nodes:
        pair = _producer_call(program, node)
        _tag(pair, node)
        if _is_complex(node):
            _rewrite_readers(graph, node, pair)
            if not node.users:
                graph.erase_node(node)
        else:  # stft(return_complex=False): the pair stacked last, as it returns it
            _replace(graph, node, stacked, (pair,), node)
    graph.eliminate_dead_code()
    gm.recompile()
    return len(nodes)


def has_spectra(program: ExportedProgram) -> bool:
    return bool(spectral_nodes(program.graph_module))


__all__ = ["TAG", "fft_pair", "has_spectra", "rewrite_spectra", "stft_pair"]
