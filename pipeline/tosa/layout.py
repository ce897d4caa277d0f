"""Dimension orders: TOSA is NHWC, torch is NCHW.

Every FX value carries a ``tosa_dim_order``: the TOSA tensor's dimension ``i`` is torch's
dimension ``order[i]``. 4-D values use NHWC (0, 2, 3, 1), everything else keeps torch's order.
Because the whole graph, including its 4-D inputs and outputs, is NHWC, no TRANSPOSE is needed
at the boundaries; io.json records each IO's order so callers permute their data once.
"""

from __future__ import annotations

from collections.abc import Sequence

NHWC = (0, 2, 3, 1)


def default_order(rank: int) -> tuple[int, ...]:
    return NHWC if rank == 4 else tuple(range(rank))


def layout_name(order: Sequence[int]) -> str:
    """``NHWC`` for the 4-D image order, ``torch`` when dims keep torch's order."""
    if tuple(order) == NHWC:
        return "NHWC"
    return "torch" if tuple(order) == tuple(range(len(order))) else "custom"


def permute(shape: Sequence[int], order: Sequence[int]) -> tuple[int, ...]:
    return tuple(shape[d] for d in order)


def inverse(order: Sequence[int]) -> tuple[int, ...]:
    result = [0] * len(order)
    for i, d in enumerate(order):
        result[d] = i
    return tuple(result)


def is_identity(order: Sequence[int]) -> bool:
    return tuple(order) == tuple(range(len(order)))


def moves_only_unit_dims(shape: Sequence[int], perm: Sequence[int]) -> bool:
    """Whether TRANSPOSE(shape, perm) keeps the memory order (only size-1 dims move), so a
    RESHAPE can replace it: e.g. NHWC [1, 1, 1, C] -> NCHW [1, C, 1, 1]."""
    moved = [d for d in perm if shape[d] != 1]
    return moved == sorted(moved)
