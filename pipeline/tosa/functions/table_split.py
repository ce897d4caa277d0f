"""A split int16 TABLE for a function steep near one end of its inputs (rsqrt, reciprocal,
log near 0; exp near the top of softmax's ``x - max``): a second, zoomed table for the steep
part.

The interpolated TABLE's error grows with the curvature (``h**2 * |f''| / 8``): rsqrt of a
layer norm's variance is off by 500 LSBs in the first intervals past where its output
saturates, a fraction of one elsewhere. Below a code ``t`` (the end of the last steep
interval) a table on ``k * x`` (``k = 32767 // t``) has intervals ``k`` times narrower, so
``k**2`` times less error:

    y = TABLE_coarse(CLAMP(x, t, 32767)) + TABLE_fine(k * CLAMP(x, -32768, t))

The fine table's entries are less its entry at ``k * t``, which is set to the coarse table's
entry at ``t``: for ``x >= t`` the fine term is exactly 0 and ``y`` is the coarse table's;
for ``x < t`` the coarse term is its entry at ``t`` and ``y`` the fine table's. Both are in
int32 steps of 1/128 entry; one RESCALE follows. The zoom saturates only negative codes,
which must be flat (``table_zoom.FLAT``) as for a zoom. Verify bounds the sum by the two
tables' bounds over the codes their CLAMPs let through (``pipeline/verify/error_bound.py``).

The mirror, steep from a code ``t`` (the first code of the first steep interval) up to where
the output is flat (exp of softmax's ``x - max <= 0``: 25 LSBs off in the intervals below 0),
reads a fine table for the codes above ``t``, zoomed by ``k`` about an offset ``c``:

    y = TABLE_coarse(CLAMP(x, -32768, t)) + TABLE_fine(k * (x + c))

``c`` puts ``k * (t + c)`` on the entry at or just above -32768, so the fine table spans
about ``65536 / k`` codes from ``t``; int16 RESCALE takes no zero point, so ``+ c`` is an
int32 ADD between a RESCALE to int32 (by 1) and the zooming RESCALE back to int16 (by ``k``,
saturating: exact but for the codes above ``32767 / k - c``, which must be flat). ``k`` is
the largest zoom up to ``MAX_ZOOM`` for which they are. The fine entries are less its entry
at ``k * (t + c)``, set to the coarse one at ``t``, and 0 below it, so codes below ``t``
(saturated or not) read 0 and need no CLAMP: the same hand-over as below ``t``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from pipeline.tosa.emit import common as emit
from pipeline.tosa.functions.table_zoom import interpolation_bound
from pipeline.tosa.functions.table_zoom import CODES, FLAT, MAX_ZOOM

STEEP = 4.0  # entry steps: an interval whose bound exceeds this is steep
STARTS = np.arange(-32768, 32768, 128)  # the first input code of each interval


def split_code(coarse: np.ndarray, flat: Callable[[int], bool]) -> tuple[int, int] | None:
    """``(t, k)`` for ``coarse`` (513 wanted entries): ``t`` past the last steep interval,
    ``k >= 4`` and ``flat(k)`` (the codes below ``-32768 / k``, which the zoom saturates,
    flat: a steep interval there rules the split out); else None."""
    bounds = interpolation_bound(np.round(coarse).astype(np.int64), STARTS)
    steep = np.flatnonzero(bounds > STEEP)
    if steep.size == 0:
        return None
    t = int(STARTS[steep[-1]]) + 128
    k = 32767 // t if t > 0 else 0
    return (t, k) if k >= 4 and flat(k) else None


def fine_entries(fine: np.ndarray, coarse_at_t: float, t: int, k: int) -> np.ndarray:
    """The fine table's wanted entries less its entry at ``k * t`` (set to the coarse one's
    at ``t``): 0 there; codes past it are never read (the CLAMP) and hold 0."""
    index = (k * t + 32768) // 128
    if (k * t) % 128:
        raise ValueError(f"k * t must fall on an entry; got k={k}, t={t}")
    out = np.array(fine, dtype=np.float64)
    out[index] = coarse_at_t
    out = out - coarse_at_t
    out[index + 1 :] = 0.0
    return out


def emit_split(ctx, node, x: str, tables: tuple[str, str], t: int, k: int) -> str:
    """The int32 sum of the coarse and fine tables (``tables``) read as the docstring says."""
    shape = ctx.graph.tensors[x].shape
    high = ctx.temp(node, "steep_high", shape, "int16")
    low = ctx.temp(node, "steep_low", shape, "int16")
    ctx.emit("CLAMP", [x], [high], node, min_val=t, max_val=32767, nan_mode="PROPAGATE")
    ctx.emit("CLAMP", [x], [low], node, min_val=-32768, max_val=t, nan_mode="PROPAGATE")
    zoomed = emit.rescale(ctx, node, low, [k], in_zp=0, out_zp=0, out_dtype="int16",
                          suffix="steep_zoomed")  # fmt: skip
    return _table_sum(ctx, node, (high, zoomed), tables)


def split_high(
    coarse: np.ndarray, exact: Callable[[np.ndarray], np.ndarray]
) -> tuple[int, int, int] | None:
    """``(t, k, c)`` of the mirrored split for ``coarse`` (513 wanted entries): ``t`` the
    first code of the first steep interval, ``k >= 4`` the largest zoom whose saturated codes
    (above ``32767 / k - c``) have ``exact`` (output LSBs at possibly fractional input codes,
    clamped to the output's range) within ``FLAT`` of its value there; else None."""
    bounds = interpolation_bound(np.round(coarse).astype(np.int64), STARTS)
    steep = np.flatnonzero(bounds > STEEP)
    if steep.size == 0:
        return None
    t = int(STARTS[steep[0]])
    ks = np.arange(MAX_ZOOM, 3, -1)
    offsets = np.array([-t - _reach_below(int(k)) for k in ks])
    saturated = 32767 / ks - offsets  # the code where k * (x + c) reaches 32767
    values, ends = exact(CODES), exact(saturated)
    for k, c, at, end in zip(ks, offsets, saturated, ends, strict=True):
        if np.all(np.abs(values[int(np.floor(at)) + 32769 :] - end) <= FLAT):
            return t, int(k), int(c)
    return None


def _reach_below(k: int) -> int:
    """The largest ``m <= 32768 / k`` with ``k * m`` a multiple of 128 (on an entry)."""
    step = 128 // math.gcd(k, 128)
    return (32768 // k) // step * step


def fine_entries_above(fine: np.ndarray, coarse_at_t: float, index: int) -> np.ndarray:
    """The mirrored fine table's wanted entries less its entry ``index`` (at ``k * (t + c)``,
    set to the coarse one's at ``t``): 0 there and below, where the codes below ``t`` read."""
    out = np.array(fine, dtype=np.float64)
    out[index] = coarse_at_t
    out = out - coarse_at_t
    out[:index] = 0.0
    return out


def emit_split_high(ctx, node, x: str, tables: tuple[str, str], t: int, k: int, c: int) -> str:
    """The int32 sum of the coarse and fine tables (``tables``) of the mirrored split."""
    shape = ctx.graph.tensors[x].shape
    low = ctx.temp(node, "steep_low", shape, "int16")
    ctx.emit("CLAMP", [x], [low], node, min_val=-32768, max_val=t, nan_mode="PROPAGATE")
    wide = emit.rescale(ctx, node, x, [1], in_zp=0, out_zp=0, out_dtype="int32",
                        suffix="steep_wide")  # fmt: skip
    offset = ctx.const(f"{node.name}_steep_offset", np.full((1,) * len(shape), c), "int32")
    moved = ctx.temp(node, "steep_moved", shape, "int32")
    ctx.emit("ADD", [wide, offset], [moved], node)
    zoomed = emit.rescale(ctx, node, moved, [k], in_zp=0, out_zp=0, out_dtype="int16",
                          suffix="steep_zoomed")  # fmt: skip
    return _table_sum(ctx, node, (low, zoomed), tables)


def _table_sum(ctx, node, sources: tuple[str, str], tables: tuple[str, str]) -> str:
    """The int32 sum of the coarse table at ``sources[0]`` and the fine one at ``sources[1]``."""
    shape = ctx.graph.tensors[sources[0]].shape
    parts = []
    for source, table in zip(sources, tables):
        parts.append(ctx.temp(node, "steep_part", shape, "int32"))
        ctx.emit("TABLE", [source, table], [parts[-1]], node)
    total = ctx.temp(node, "steep_sum", shape, "int32")
    ctx.emit("ADD", parts, [total], node)
    return total
