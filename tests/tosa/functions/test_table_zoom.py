import numpy as np
import pytest

from pipeline.tosa.functions.table_zoom import FLAT, zoom_factor


def _lsbs(fn, scale, out_scale, qmin=-32767, qmax=32767):
    """The exact output in LSBs of ``fn`` at int16 codes of ``scale``, clamped."""
    return lambda codes: np.clip(fn(codes * scale) / out_scale, qmin, qmax)


@pytest.mark.parametrize(
    "fn, amplitude, expected",
    [
        pytest.param(np.tanh, 16.0, 2, id="tanh_16"),  # flat past +-8 (under FLAT from -1)
        pytest.param(np.tanh, 1.0, 1, id="tanh_1"),  # changes everywhere: no zoom
        pytest.param(np.sin, 100.0, 1, id="sin"),  # never flat
        pytest.param(lambda x: np.exp(np.minimum(x, 0)), 60.0, 4, id="exp_60"),
    ],
)
def test_zoom_spans_where_the_output_changes(fn, amplitude, expected):
    assert zoom_factor(_lsbs(fn, amplitude / 32767, 1 / 32767)) == expected


def test_saturated_codes_are_within_flat_of_the_tables_end():
    exact = _lsbs(np.tanh, 40 / 32767, 1 / 32767)
    k = zoom_factor(exact)
    codes = np.arange(-32768, 32768)
    saturated = (codes * k > 32767) | (codes * k < -32768)
    end = exact(np.clip(codes * k, -32768, 32767) / k)
    assert k == 5 and saturated.any()
    assert np.all(np.abs(exact(codes.astype(float)) - end)[saturated] <= FLAT)
    # one more and a code would be off by more than FLAT
    end = exact(np.clip(codes * (k + 1), -32768, 32767) / (k + 1))
    assert np.abs(exact(codes.astype(float)) - end).max() > FLAT
