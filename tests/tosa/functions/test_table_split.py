import numpy as np

from pipeline.tosa.functions.table_split import fine_entries, fine_entries_above, split_code, split_high


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


def _exp_lsbs(codes, scale=20 / 32767):
    """softmax's exp(x - max) over [-20, 0]: output LSBs of 1 / 32767, clamped (flat above 0)."""
    return np.minimum(np.exp(np.asarray(codes, dtype=np.float64) * scale) * 32767, 32767)


def test_steep_top_splits_above_its_first_steep_interval_with_the_largest_flat_zoom():
    coarse = np.minimum(_exp_lsbs(np.arange(-32768, 32769, 128)), 32767 + 1024)
    t, k, c = split_high(coarse, _exp_lsbs)
    assert t % 128 == 0 and -8192 < t < 0 and k >= 8
    assert (k * (t + c)) % 128 == 0 and -32768 <= k * (t + c) < -32768 + 128 * k
    assert np.all(_exp_lsbs(np.arange(32767 // k - c, 32768)) == 32767)  # saturated: flat
    rsqrt = _rsqrt_entries(4 / 32767, 10 / 32767)  # steep at the low end: not above

    def rsqrt_lsbs(codes):
        with np.errstate(divide="ignore"):
            return np.minimum(1 / np.sqrt(np.maximum(codes, 0) * 4 / 32767) * 32767 / 10, 32767)

    assert split_high(rsqrt, rsqrt_lsbs) is None


def test_fine_entries_above_hand_over_from_the_coarse_table_at_t():
    fine = fine_entries_above(np.arange(513.0) * 10, 55.0, 7)
    assert np.all(fine[:8] == 0) and fine[8] == 80 - 55
