"""What mean and sum share: which dims of the TOSA tensor a reduction covers and how the
result is laid out afterwards.

The reduced dims must be adjacent in the TOSA tensor (``x.mean((2, 3))`` of an NHWC image,
``x.sum(-1)`` of tokens); the input is then viewed as ``[outer, reduced, inner]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import fx

from pipeline.tosa.context import LoweringContext, dim_order, torch_shape


@dataclass(frozen=True)
class Reduction:
    positions: list[int]  # reduced positions in the input's TOSA order
    shape: tuple[int, ...]  # the input's TOSA shape
    keepdim: bool

    @property
    def outer(self) -> int:
        return math.prod(self.shape[: self.positions[0]])

    @property
    def reduced(self) -> int:
        return math.prod(self.shape[self.positions[0] : self.positions[-1] + 1])

    @property
    def inner(self) -> int:
        return math.prod(self.shape[self.positions[-1] + 1 :])

    def result_layout(self, x: fx.Node) -> tuple[list[int], tuple[int, ...]]:
        """(TOSA shape, dim order) of the reduced tensor: the kept dims in the input's order,
        or with ``keepdim`` size-1 dims where the reduced ones were (the order still holds)."""
        if self.keepdim:
            return [1 if i in self.positions else s for i, s in enumerate(self.shape)], dim_order(x)
        kept = [d for i, d in enumerate(dim_order(x)) if i not in self.positions]
        shape = [s for i, s in enumerate(self.shape) if i not in self.positions]
        return shape, tuple(sorted(kept).index(d) for d in kept)


def reduction(node: fx.Node, ctx: LoweringContext) -> Reduction:
    """The reduction ``node`` (``aten.mean.dim`` / ``aten.sum``: input, dims, keepdim) asks for;
    no dims (or ``[]``) means all of them.

    Raises:
        UnsupportedOperatorError: a dtype argument, or dims not adjacent in the TOSA tensor.
    """
    x = node.args[0]
    if node.kwargs.get("dtype") is not None:
        raise ctx.unsupported(node, f"dtype={node.kwargs['dtype']}", "no dtype")
    keepdim = bool(node.args[2]) if len(node.args) > 2 else bool(node.kwargs.get("keepdim"))
    rank = len(torch_shape(x))
    dims = node.args[1] if len(node.args) > 1 and node.args[1] else range(rank)
    dims = {int(d) % rank for d in dims}
    positions = sorted(i for i, d in enumerate(dim_order(x)) if d in dims)
    if positions != list(range(positions[0], positions[-1] + 1)):
        raise ctx.unsupported(
            node, "dims not adjacent in the tensor's layout", "adjacent dims (e.g. H and W)"
        )
    return Reduction(positions, ctx.graph.tensors[ctx.tensor(x)].shape, keepdim)
