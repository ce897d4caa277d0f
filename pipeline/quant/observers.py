"""``MseObserver``: the activation range that minimises the expected quantization error.

For each tensor it quantizes it keeps an exact histogram of what the calibration samples
produce (bins of a power-of-two width aligned to 0, so doubling the width to take in a wider
range merges pairs of bins without error; per bin the count, sum and sum of squares) and, for
each candidate range, adds up the error of quantizing every value to the grid that range
gives:
- values beyond the range: their exact squared distance to the clipping edge;
- values inside: the rounding error of the grid (a sawtooth, integrated over each bin with
  the values spread evenly within it: s^2/12 where bins are narrower than a step ``s``);
- exact zeros (half of a relu's output): nothing, the grid always holds 0.
The range kept has the least total error, searched from the observed min/max down: that
includes min/max itself, so on the calibration data it is never worse than min/max; with
uniform values it is min/max, with a long tail it clips the tail. int16 (symmetric) ranges are
searched the same way (there clipping rarely pays).

One observer can quantize several tensors (qparams shared by a pool, a reshape, a concat, a
LayerNorm's mean): ``count_observed_tensors`` tells it how many calls make one sample, and the
error it minimises is then the sum of each tensor's mean error per value, so a global average
pool's few outputs, whose rounding no later average smooths, weigh as much as the thousands of
values averaged into them (a reshape repeating the tensor before it is not counted again).
"""

from __future__ import annotations

import math

import torch
from torch import fx
from torchao.quantization.pt2e.observer import UniformQuantizationObserverBase

from pipeline.quant.held_out import held_out_growth

BINS = 2048
FOLDS = 4  # the samples are split by index into this many folds (held_out.py)
FOLD_BINS = 512  # bins of each fold's histogram
STEPS = 40  # ranges tried: the observed extreme * k, k in steps of 1/STEPS (then finer)
# The fractions a fold's range is searched over (held_out.py): int8's best range clips less
# than 60%.
COARSE = torch.arange(16, STEPS + 1, dtype=torch.float64)[:, None] / STEPS


class _Histogram:
    """Count, sum and sum of squares of the nonzero values per bin, and the zeros' count."""

    def __init__(self, bins: int):
        self.bins = bins
        self.exponent: int | None = None  # bin k: [(first + k) * 2**exponent, ... + 1)
        self.first = 0
        self.stats = torch.zeros(3, bins, dtype=torch.float64)
        self.zeros = 0.0
        self.values = 0.0  # every value seen, zeros included

    def add(self, x: torch.Tensor) -> None:
        nonzero = x[x != 0].double()
        self.values += x.numel()
        self.zeros += float(x.numel() - nonzero.numel())
        if nonzero.numel() == 0:
            return
        squares = nonzero * nonzero
        lo, hi = float(nonzero.min()), float(nonzero.max())
        if self.exponent is None:
            self.exponent = math.frexp(max(hi - lo, abs(hi), abs(lo)) / (self.bins - 2))[1]
            self.first = math.floor(lo / 2.0**self.exponent)
        while True:
            width = 2.0**self.exponent
            start, end = math.floor(lo / width), math.floor(hi / width)
            occupied = torch.nonzero(self.stats[0]).flatten() + self.first
            if occupied.numel():
                start, end = min(start, int(occupied[0])), max(end, int(occupied[-1]))
            if end - start < self.bins:
                break
            self.exponent += 1  # merge pairs of bins: exact, the grid stays aligned to 0
            self._move(lambda index: torch.div(index, 2, rounding_mode="floor"))
        self._move(lambda index: index, start)
        index = torch.floor(nonzero / width).long() - self.first
        for row, weights in enumerate((None, nonzero, squares)):
            self.stats[row] += torch.bincount(index, weights, self.bins)

    def _move(self, move, first: int | None = None) -> None:
        """Move every bin to the (absolute) index ``move`` gives; the window then starts at
        ``first`` (by default where the first bin lands)."""
        index = move(torch.arange(self.bins) + self.first)
        self.first = int(index[0]) if first is None else first
        keep = self.stats[0] > 0
        stats = torch.zeros_like(self.stats)
        stats.index_add_(1, index[keep] - self.first, self.stats[:, keep])
        self.stats = stats

    def error(self, step, low, high) -> torch.Tensor:
        """Total squared error of quantizing the values to each grid (rows: candidates)."""
        occupied = torch.nonzero(self.stats[0]).flatten()
        if occupied.numel() == 0:
            return torch.zeros_like(step[:, 0])
        first, last = int(occupied[0]), int(occupied[-1]) + 1
        stats = self.stats[:, first:last]
        width = 2.0**self.exponent
        edges = (torch.arange(first, last + 1, dtype=torch.float64) + self.first) * width
        density = stats[0] / width
        # Inside the grid: the sawtooth's integral over the part of each bin within it.
        inside = _sawtooth(torch.clamp(edges, low, high), step)
        error = (density * (inside[:, 1:] - inside[:, :-1])).sum(dim=-1)
        # Beyond it: exact over the bins wholly outside (prefix sums), evenly spread in the
        # bin an edge cuts.
        low, high = low[:, 0], high[:, 0]
        prefix = torch.nn.functional.pad(torch.cumsum(stats, dim=1), (1, 0))
        above = torch.searchsorted(edges[:-1], high)  # bins from here start at or past high
        below = torch.searchsorted(edges[1:], low, right=True)  # bins before end by low
        for edge, (n, s1, s2) in ((high, prefix[:, -1:] - prefix[:, above]),
                                  (low, prefix[:, below])):
            error += s2 - 2 * edge * s1 + n * edge**2
        left, right = edges[:-1], edges[1:]
        cut = torch.clamp(above - 1, min=0)
        error += torch.where((left[cut] < high) & (right[cut] > high),
                             density[cut] * (right[cut] - high) ** 3 / 3, 0.0)
        cut = torch.clamp(below, max=density.numel() - 1)
        error += torch.where((left[cut] < low) & (right[cut] > low),
                             density[cut] * (low - left[cut]) ** 3 / 3, 0.0)
        return error


def _sawtooth(x: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
    """The integral from 0 to ``x`` of (t - round(t / step) * step)^2 dt."""
    shifted = x + step / 2
    periods = torch.floor(shifted / step)
    y = shifted - periods * step - step / 2  # in [-step/2, step/2)
    return periods * step**3 / 12 + (y**3 + step**3 / 8) / 3 - step**3 / 24


class MseObserver(UniformQuantizationObserverBase):
    """Per-tensor observer choosing the clipping range of least expected quantization MSE."""

    min_val: torch.Tensor
    max_val: torch.Tensor

    def __init__(self, dtype=torch.int8, qscheme=torch.per_tensor_affine, quant_min=None,
                 quant_max=None, bins: int = BINS, **kwargs):
        if qscheme not in (torch.per_tensor_affine, torch.per_tensor_symmetric):
            raise NotImplementedError("MseObserver is per tensor (affine or symmetric) only")
        super().__init__(dtype=dtype, qscheme=qscheme, quant_min=quant_min,
                         quant_max=quant_max, **kwargs)
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))
        self.bins = bins
        self.tensors = 1  # calls per sample (count_observed_tensors)
        self.histograms: list[_Histogram] = []
        # Per slot, the samples in FOLDS folds by index (held_out.py), and each fold's range.
        self.folds: list[tuple[_Histogram, ...]] = []
        self.fold_ranges = [[math.inf, -math.inf] for _ in range(FOLDS)]
        self._calls = 0
        self._last: tuple | None = None
        self._qparams = None
        self.integral = True  # every value seen a whole number (ids, int8 codes, counts)

    def forward(self, x_orig: torch.Tensor) -> torch.Tensor:
        x = x_orig.detach().reshape(-1).float()
        slot, self._calls = self._calls % self.tensors, self._calls + 1
        if x.numel() == 0:
            return x_orig
        lo, hi = torch.aminmax(x)
        if not (torch.isfinite(lo) and torch.isfinite(hi)):
            x = x[torch.isfinite(x)]  # an infinity is clamped anyway: it sets no range
            if x.numel() == 0:
                return x_orig
            lo, hi = torch.aminmax(x)
        self.min_val = torch.minimum(self.min_val, lo)
        self.max_val = torch.maximum(self.max_val, hi)
        self._qparams = None
        # A reshape or copy of the tensor seen just before adds no error of its own.
        fingerprint = (x.numel(), float(lo), float(hi), float(x.sum(dtype=torch.float64)))
        alias = slot > 0 and fingerprint == self._last
        self._last = fingerprint if self.tensors > 1 else None
        if not alias:
            self.integral = self.integral and bool(torch.equal(x, torch.round(x)))
            while len(self.histograms) <= slot:
                self.histograms.append(_Histogram(self.bins))
                self.folds.append(tuple(_Histogram(FOLD_BINS) for _ in range(FOLDS)))
            self.histograms[slot].add(x)
            fold = (self._calls - 1) // self.tensors % FOLDS
            self.folds[slot][fold].add(x)
            edges = self.fold_ranges[fold]
            edges[0], edges[1] = min(edges[0], float(lo)), max(edges[1], float(hi))
        return x_orig

    def calculate_qparams(self):
        if self._qparams is None:
            self._qparams = self._search()
        return self._qparams

    def _search(self):
        if not self.histograms or self.min_val > self.max_val:
            return self._calculate_qparams(self.min_val, self.max_val)
        lo, hi = self.fit(float(self.min_val), float(self.max_val), self.expected_error)
        # int16: the step is fine enough that ranges are min/max, and a table's range is its own.
        # Whole numbers (ids, int8 codes cast to float, counts) take the values their type
        # allows: growing their range would only make an exact grid (scale 1) inexact.
        grow = (held_out_growth(self)
                if self.quant_max - self.quant_min <= 255 and not self.integral else 1.0)
        return self._calculate_qparams(torch.tensor(lo * grow), torch.tensor(hi * grow))

    def fit(self, low: float, high: float, error, fine: bool = True) -> tuple[float, float]:
        """The range of least ``error(lo, hi)`` within [low, high] (widened to hold 0)."""
        low, high = min(low, 0.0), max(high, 0.0)
        if self.qscheme == torch.per_tensor_symmetric:
            amax = max(-low, high)
            return self._best(lambda k: (-amax * k, amax * k), error, fine)
        # Coordinate descent: the best top edge for the bottom one, then the other way.
        lo, hi = low, high
        for _ in range(2 if low < 0 < high else 1):
            if high > 0:
                lo, hi = self._best(lambda k, lo=lo: (torch.full_like(k, lo), high * k), error,
                                    fine)
            if low < 0:
                lo, hi = self._best(lambda k, hi=hi: (low * k, torch.full_like(k, hi)), error,
                                    fine)
        return lo, hi

    def _best(self, ranges, error, fine: bool = True) -> tuple[float, float]:
        """The range ``ranges(k)`` of least ``error`` over fractions k in (0, 1]: k in steps
        of 1/STEPS, then (``fine``) in eighths of that around the best; not ``fine``: k in
        ``COARSE`` only."""
        k = torch.arange(1, STEPS + 1, dtype=torch.float64)[:, None] / STEPS
        if not fine:
            lo, hi = ranges(COARSE)
            index = int(torch.argmin(error(lo, hi)))
            return float(lo[index, 0]), float(hi[index, 0])
        index = int(torch.argmin(error(*ranges(k))))
        best = float(k[index])
        fine_k = torch.arange(-8, 9, dtype=torch.float64)[:, None] / (8 * STEPS)
        lo, hi = ranges(torch.clamp(best + fine_k, 1 / (8 * STEPS), 1.0))
        best = int(torch.argmin(error(lo, hi)))
        return float(lo[best, 0]), float(hi[best, 0])

    def grid(self, lo: torch.Tensor, hi: torch.Tensor):
        """(step, lowest, highest) of the grid torchao makes for each range [lo, hi]."""
        qmin, qmax = self.quant_min, self.quant_max
        lo, hi = torch.clamp(lo, max=0.0), torch.clamp(hi, min=0.0)
        eps = float(self.eps)
        if self.qscheme == torch.per_tensor_symmetric:
            step = torch.clamp(torch.maximum(-lo, hi) / ((qmax - qmin) / 2), min=eps)
            return step, qmin * step, qmax * step
        step = torch.clamp((hi - lo) / (qmax - qmin), min=eps).float().double()
        zero_point = torch.clamp(qmin - torch.round(lo / step), qmin, qmax)
        return step, (qmin - zero_point) * step, (qmax - zero_point) * step

    def expected_error(self, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
        """Each candidate range's mean squared error per value, summed over the tensors."""
        step, low, high = self.grid(lo, hi)
        total = torch.zeros_like(step[:, 0])
        for histogram in self.histograms:
            total += histogram.error(step, low, high) / max(histogram.values, 1.0)
        return total

    def fold_error(self, lo: torch.Tensor, hi: torch.Tensor, fold: int, inside: bool = True):
        """``expected_error`` over the samples of one fold (``inside``), or over those of the
        other folds (their histograms' errors summed: the error is a sum)."""
        step, low, high = self.grid(lo, hi)
        total = torch.zeros_like(step[:, 0])
        for folds in self.folds:
            parts = [folds[fold]] if inside else [f for i, f in enumerate(folds) if i != fold]
            error = sum(part.error(step, low, high) for part in parts if part.values)
            values = sum(part.values for part in parts)
            if values:
                total += error / values
        return total


def count_observed_tensors(prepared: fx.GraphModule) -> None:
    """Tell every ``MseObserver`` of a prepared model how many tensors it observes per sample
    (prepare shares one observer among the tensors of shared qparams)."""
    calls: dict[int, int] = {}
    for node in prepared.graph.nodes:
        # get_submodule: named_modules() lists a shared observer under one name only.
        observer = prepared.get_submodule(str(node.target)) if node.op == "call_module" else None
        if isinstance(observer, MseObserver):
            calls[id(observer)] = calls.get(id(observer), 0) + 1
            observer.tensors = calls[id(observer)]
