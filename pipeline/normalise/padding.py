"""Padding modes other than a constant, written out before quantization (and for float
programs alike) as SLICEs and one CONCAT per padded dimension: movement only, so the
quantized graph is exact and every piece is an operator Ethos-U55 and -U85 take.

- ``reflect``: the elements next to the edge, mirrored (``[c b | a b c d | c b]``): one
  single-element slice each, in mirrored order (no REVERSE, which Ethos-U55 lacks);
- ``replicate``: the edge element repeated (``[a a | a b c d | d d]``);
- ``circular``: the other end's elements (``[c d | a b c d | a b]``).

``mode='constant'`` stays ``aten.pad`` (one PAD, ``ops/op_pad.py``).
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _pieces(x: torch.Tensor, dim: int, count: int, mode: str, after: bool) -> list:
    size = x.shape[dim]
    if mode == "replicate":
        return [x.narrow(dim, size - 1 if after else 0, 1)] * count
    if mode == "circular":
        return [x.narrow(dim, 0, count) if after else x.narrow(dim, size - count, count)]
    # reflect: the edge itself is not repeated
    order = range(size - 2, size - 2 - count, -1) if after else range(count, 0, -1)
    return [x.narrow(dim, k, 1) for k in order]


def pad(x: torch.Tensor, pad: list[int], mode: str = "constant", value=None) -> torch.Tensor:
    if mode not in ("reflect", "replicate", "circular"):
        return NotImplemented  # constant: one PAD
    for i in range(len(pad) // 2):
        dim = x.dim() - 1 - i
        before, after = int(pad[2 * i]), int(pad[2 * i + 1])
        if before < 0:  # circular also crops
            x = x.narrow(dim, -before, x.shape[dim] + before)
        if after < 0:
            x = x.narrow(dim, 0, x.shape[dim] + after)
        pieces = _pieces(x, dim, before, mode, False) if before > 0 else []
        pieces.append(x)
        pieces += _pieces(x, dim, after, mode, True) if after > 0 else []
        x = torch.cat(pieces, dim) if len(pieces) > 1 else x
    return x


def _constant(node) -> bool:
    mode = node.args[2] if len(node.args) > 2 else node.kwargs.get("mode", "constant")
    return mode == "constant"


# The calls ``pad`` returns NotImplemented for: a re-trace keeps them as they are, and so does
# normalisation's rewrite without one (local.py).
pad.keeps = _constant

DECOMPOSITIONS = {aten.pad.default: pad}
