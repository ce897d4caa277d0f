"""How far past the calibration samples an activation range must reach: chosen per tensor by
the error measured on samples the range was not fitted to.

The range of least error over the calibration samples (``MseObserver``) is fitted to them:
with 16 samples a deep feature map's values on the 17th input often reach beyond the largest
the 16 produced, and int8 clips them. Whether a tensor's do is measured, not assumed: the
samples are split by index into ``FOLDS`` folds; for each fold, the range is fitted on the
other folds and the fold's own error counted for that range grown by each factor of
``GROWTH`` (clipping included, exactly as the observer counts it). The factor of least
held-out error over the folds grows the range fitted on every sample. Where the folds agree
(uniform values, a bounded activation, the same sample repeated) the factor is 1 and the
range is the one fitted.
"""

from __future__ import annotations

import statistics

import torch

# Below 1 too: each fold's best factor is a noisy estimate, and one that could only err
# upwards would grow every range a little.
GROWTH = torch.tensor([0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15, 1.25, 1.35, 1.5, 1.7, 2.0],
                      dtype=torch.float64)[:, None]


def held_out_growth(observer) -> float:
    """The factor (>= 1) by which ``observer``'s fitted range grows: 1 unless at least two
    folds saw values."""
    seen = [f for f, (low, high) in enumerate(observer.fold_ranges) if low <= high]
    if len(seen) < 2 or not observer.folds:
        return 1.0
    best = []
    for fold in seen:
        others = [observer.fold_ranges[f] for f in seen if f != fold]
        low, high = min(r[0] for r in others), max(r[1] for r in others)
        lo, hi = observer.fit(low, high, lambda lo, hi, fold=fold: observer.fold_error(
            lo, hi, fold, inside=False), fine=False)
        error = observer.fold_error(lo * GROWTH, hi * GROWTH, fold)
        best.append(float(GROWTH[int(torch.argmin(error)), 0]))
    return max(1.0, statistics.median(best))
