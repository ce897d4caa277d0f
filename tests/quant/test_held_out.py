"""How far an activation range reaches past the calibration samples (held_out.py)."""

import pytest
import torch

pytestmark = pytest.mark.needs_torch

INT8 = {"dtype": torch.int8, "qscheme": torch.per_tensor_affine, "quant_min": -128,
        "quant_max": 127}


def observed(batches):
    from pipeline.quant.observers import MseObserver

    observer = MseObserver(**INT8)
    for batch in batches:
        observer(batch)
    return observer


def level_shifts(seed, count):
    """Per sample 256 values around a level that moves from sample to sample (a channel
    whose brightness follows the input's), so a new sample's values can land beyond every
    calibration sample's."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(256, generator=generator) * 0.2
            + 2 * float(torch.randn(1, generator=generator)) for _ in range(count)]


def unseen_mse(observer, x, grow: float) -> float:
    """The error of quantizing ``x`` to the grid of the range fitted on the samples, grown."""
    lo, hi = observer.fit(float(observer.min_val), float(observer.max_val),
                          observer.expected_error)
    step = (hi - lo) * grow / 255
    zero_point = -128 - round(lo * grow / step)
    q = torch.clamp(torch.round(x / step) + zero_point, -128, 127)
    return float(((q - zero_point) * step - x).pow(2).mean())


def test_ranges_grow_where_new_samples_reach_past_them_and_that_pays():
    """Over eight draws of 16 calibration samples each, against 64 unseen samples per draw:
    the grown ranges' total error is lower than the fitted ones'."""
    from pipeline.quant.held_out import held_out_growth

    grown = fitted = 0.0
    growths = []
    for seed in range(8):
        observer = observed(level_shifts(seed, 16))
        growths.append(held_out_growth(observer))
        unseen = torch.cat(level_shifts(seed + 100, 64))
        grown += unseen_mse(observer, unseen, growths[-1])
        fitted += unseen_mse(observer, unseen, 1.0)
    assert any(g > 1.0 for g in growths)
    assert grown < 0.97 * fitted


def test_a_range_stays_where_every_sample_spans_the_same_values():
    from pipeline.quant.held_out import held_out_growth

    generator = torch.Generator().manual_seed(0)
    batches = [torch.rand(4096, generator=generator) * 3 - 1 for _ in range(16)]
    assert held_out_growth(observed(batches)) == 1.0


@pytest.mark.parametrize("count", [1, 3])
def test_too_few_samples_for_folds_keep_the_fitted_range(count):
    """One sample: no fold to hold out; three: every fold but one."""
    from pipeline.quant.held_out import held_out_growth

    observer = observed(level_shifts(0, count))
    growth = held_out_growth(observer)
    assert growth == 1.0 if count == 1 else growth >= 1.0
