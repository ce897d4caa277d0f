"""What mean and sum share: which dims of the TOSA tensor a reduction covers, how they are
summed, and how the result is laid out afterwards.

Adjacent reduced dims (``x.mean((2, 3))`` of an NHWC image, ``x.sum(-1)`` of tokens) view the
input as ``[outer, reduced, inner]``. Dims apart in the layout (``x.mean((1, 2))`` of an
image: C and H of NHWC) are summed run by run (``sum_runs``): one REDUCE_SUM per run of
adjacent reduced dims, each over a rank-4 view, in int32 for integers. Sums are exact, so
the one RESCALE after them rounds once, as torch's q/dq graph does; no TRANSPOSE is needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape

_INT32_MAX = 2**31 - 1
MAX_SUMMED = 65536


@dataclass(frozen=True)
class Reduction:
    positions: list[int]  # reduced positions in the input's TOSA order
    shape: tuple[int, ...]  # the input's TOSA shape
    keepdim: bool

    @property
    def adjacent(self) -> bool:
        return self.positions == list(range(self.positions[0], self.positions[-1] + 1))

    @property
    def runs(self) -> list[tuple[int, int]]:
        """``(first, last)`` positions of each run of adjacent reduced dims, in order."""
        runs: list[list[int]] = []
        for p in self.positions:
            if runs and runs[-1][1] == p - 1:
                runs[-1][1] = p
            else:
                runs.append([p, p])
        return [(a, b) for a, b in runs]

    def steps(self, most: int | None = None) -> list[tuple[int, int, int]]:
        """``(before, reduced, after)`` element counts of each run, last run first: reducing
        the runs in that order, each one's ``before`` still holds the runs not yet reduced.
        ``most``: a run of several dims reducing more values is split, innermost dims first."""
        shape, steps = list(self.shape), []
        for first, last in reversed(self._split(most)):
            run = math.prod(shape[first : last + 1])
            steps.append((math.prod(shape[:first]), run, math.prod(shape[last + 1 :])))
            shape[first : last + 1] = [1] * (last + 1 - first)
        return steps

    def _split(self, most: int | None) -> list[tuple[int, int]]:
        runs = []
        for first, last in self.runs:
            parts = [[last, last]]
            for p in range(last - 1, first - 1, -1):
                grown = math.prod(self.shape[p : parts[-1][1] + 1])
                if most is not None and grown > most:
                    parts.append([p, p])
                else:
                    parts[-1][0] = p
            runs.extend((a, b) for a, b in reversed(parts))
        return runs

    @property
    def count(self) -> int:
        """How many values each output averages or sums."""
        return math.prod(self.shape[p] for p in self.positions)

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
    no dims (or ``[]``) means all of them. Negative dims count from the end.

    Raises:
        UnsupportedOperatorError: a dtype argument.
    """
    x = node.args[0]
    if node.kwargs.get("dtype") is not None:
        raise ctx.unsupported(node, f"dtype={node.kwargs['dtype']}", "no dtype")
    keepdim = bool(node.args[2]) if len(node.args) > 2 else bool(node.kwargs.get("keepdim"))
    rank = len(torch_shape(x))
    dims = node.args[1] if len(node.args) > 1 and node.args[1] else range(rank)
    dims = {int(d) % rank for d in dims}
    positions = sorted(i for i, d in enumerate(dim_order(x)) if d in dims)
    return Reduction(positions, ctx.graph.tensors[ctx.tensor(x)].shape, keepdim)


def sum_view(before: int, reduced: int, after: int) -> tuple[tuple[int, ...], int]:
    """(rank-4 view, axis) summing ``reduced`` values: over depth when nothing follows them
    (native on Ethos-U), else over W of ``[1, before, reduced, after]``."""
    if after == 1:
        return (1, 1, before, reduced), 3
    return (1, before, reduced, after), 2


def sum_runs(ctx: LoweringContext, node: fx.Node, r: Reduction) -> str:
    """Sums of the input over the reduced dims: int32 sums of ``x - zero point`` (exact; the
    caller's RESCALE rounds once) or float sums; one REDUCE_SUM per run of adjacent reduced
    dims, last run first, each over a ``sum_view``. The result's shape is a view; reshape it.

    Raises:
        UnsupportedOperatorError: integer sums int32 cannot hold.
    """
    x = node.args[0]
    x_q = ctx.qparams(x)
    if x_q is not None and r.count * (x_q.qmax - x_q.qmin) > _INT32_MAX:
        raise ctx.unsupported(node, f"{r.count} {x_q.dtype} values", "a sum int32 holds")
    current = ctx.tensor(x)
    # Vela runs the first sum with its zero-point RESCALE as one CONV2D of at most
    # MAX_SUMMED values on Ethos-U55/U65 (pipeline/ethosu/placement.py, _u55_reduce_sum).
    for before, reduced, after in r.steps(MAX_SUMMED):
        view, axis = sum_view(before, reduced, after)
        current = emit.reshape(ctx, node, current, view)
        if x_q is not None and ctx.graph.tensors[current].dtype != "int32":
            current = emit.rescale(
                ctx, node, current, [1.0], in_zp=x_q.zero_point, out_zp=0, out_dtype="int32",
                suffix="wide",
            )  # fmt: skip
        summed = list(view)
        summed[axis] = 1
        total = ctx.temp(node, "sum", summed, ctx.graph.tensors[current].dtype)
        ctx.emit("REDUCE_SUM", [current], [total], node, axis=axis)
        current = total
    return current
