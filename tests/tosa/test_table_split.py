import numpy as np

from pipeline.tosa.table_split import fine_entries, split_code


def _rsqrt_entries(scale, out_scale, zoom=1):
    codes = np.arange(-32768, 32769, 128) / zoom
    with np.errstate(divide="ignore", invalid="ignore"):
        values = 1 / np.sqrt(np.maximum(codes, 0) * scale) / out_scale
    return np.minimum(values, 32767 + 1024)


def test_steep_end_splits_past_its_last_steep_interval():
    coarse = _rsqrt_entries(4 / 32767, 10 / 32767)
    t, k = split_code(coarse, lambda k: True)
    assert t % 128 == 0 and 0 < t < 8192 and k == 32767 // t


def test_no_split_when_the_saturated_codes_are_not_flat_or_nothing_is_steep():
    assert split_code(_rsqrt_entries(4 / 32767, 10 / 32767), lambda k: False) is None
    assert split_code(np.linspace(-30000, 30000, 513), lambda k: True) is None


def test_fine_entries_hand_over_to_the_coarse_table_at_t():
    coarse = _rsqrt_entries(4 / 32767, 10 / 32767)
    t, k = split_code(coarse, lambda k: True)
    fine = fine_entries(_rsqrt_entries(4 / 32767, 10 / 32767, k), coarse[(t + 32768) // 128], t, k)
    index = (k * t + 32768) // 128
    assert fine[index] == 0 and np.all(fine[index:] == 0)
    assert np.all(fine[256:index] > 0)  # rsqrt decreases: above the hand-over value below t
