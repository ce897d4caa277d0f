"""The zoom of an int16 TABLE: where a function's output is flat beyond some input interval
(tanh, sigmoid and exp saturate; the output's qparams clamp it), an integer RESCALE before the
TABLE spreads that interval over the table's 513 entries instead of the whole int16 range.

Interpolating 128 input steps apart errs by ``h**2 * |f''| / 8``: zooming by ``k`` shrinks the
step ``h`` by ``k`` and the error by ``k**2`` (tanh over +-16: 6 -> 2 LSBs; exp over
[-60, 0] in softmax: 49 -> 2). The RESCALE multiplies by an integer, so it is exact except
where it saturates - and it saturates only codes whose output is within ``FLAT`` LSBs of the
output at the saturation point, where the table reads it. That is checked on every one of the
65536 input codes, so it holds for the function, not for a test input; verify adds ``FLAT`` to
the bound of a saturated element (``pipeline/verify/error_bound.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

FLAT = 2.0**-6  # output LSBs a saturated code may differ from the table's end
FLOAT32_MARGIN = 2.0**-8  # float32 error of an int8 table entry (~2**-14 LSB), with margin
MAX_ZOOM = 256  # past this the 513 entries span under 2 codes each: nothing left to gain
CODES = np.arange(-32768, 32768, dtype=np.float64)


def zoom_factor(exact: Callable[[np.ndarray], np.ndarray]) -> int:
    """The largest integer ``k <= MAX_ZOOM`` such that every int16 code ``c`` with ``k * c``
    outside int16 has ``exact(c)`` within ``FLAT`` of ``exact`` at the saturation point
    (``32767 / k`` or ``-32768 / k``); 1 when no zoom qualifies.

    ``exact(codes)``: the function's exact output in output LSBs, clamped to the output's
    range, at (possibly fractional) input codes."""
    values = exact(CODES)
    ks = np.arange(MAX_ZOOM, 1, -1, dtype=np.float64)
    ends = exact(np.concatenate([-32768 / ks, 32767 / ks]))
    low, high = ends[: ks.size], ends[ks.size :]
    for i, k in enumerate(ks):
        below = values[: int(np.ceil(32768 - 32768 / k))]  # codes c < -32768 / k
        above = values[int(np.floor(32768 + 32767 / k)) + 1 :]  # codes c > 32767 / k
        if _within(below, low[i]) and _within(above, high[i]):
            return int(k)
    return 1


def _within(values: np.ndarray, end: float) -> bool:
    return bool(np.all(np.abs(values - end) <= FLAT))


def interpolation_bound(entries: np.ndarray, inputs: np.ndarray) -> np.ndarray:
    """Per int16 input of an interpolated TABLE: the bound of its result in entry steps - the
    rounded entries (0.5 and a float32 margin) plus twice the linear interpolation bound
    ``h**2 * |f''| / 8`` over its interval, ``f''`` estimated by the larger second difference
    at the interval's two entries (entry rounding adds up to 2 to a second difference)."""
    second = np.abs(np.diff(entries.astype(np.int64), 2)).astype(np.float64)
    at_entry = np.concatenate([second[:1], second, second[-1:]])  # one per entry
    per_interval = np.maximum(at_entry[:-1], at_entry[1:])
    index = np.clip((inputs.astype(np.int64) + 32768) >> 7, 0, per_interval.size - 1)
    return 0.5 + FLOAT32_MARGIN * 4 + 2 * (per_interval[index] + 2) / 8
