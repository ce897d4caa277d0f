"""benchmarks/gen_nets: seeded random networks with BatchNorm statistics from data and
structured inputs (the networks bench_numerics.py compares quantizers on)."""

from __future__ import annotations

import pytest
import torch

from benchmarks.gen_nets import FAMILIES, make_net
from benchmarks.gen_nets.inputs import draw

pytestmark = pytest.mark.needs_torch


@pytest.fixture(scope="module")
def nets():
    torch.set_num_threads(1)
    return [make_net(i) for i in range(len(FAMILIES))]


def test_families_in_turn_and_the_same_net_for_the_same_seed(nets):
    assert [n.family for n in nets] == list(FAMILIES)
    again = make_net(1)
    x = nets[1].tests()[0]
    with torch.no_grad():
        assert torch.equal(nets[1].module(*x), again.module(*x))
    assert not torch.equal(nets[1].calibration()[0][0], nets[1].tests()[0][0])


def test_batch_norm_statistics_come_from_the_data(nets):
    """Not the defaults (mean 0, variance 1): the nets were run in train mode over batches
    of their own inputs, and are back in eval mode."""
    norms = [m for n in nets for m in n.module.modules()
             if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    assert norms and not any(n.module.training for n in nets)
    assert all(float(m.running_var.sub(1).abs().max()) > 1e-3 for m in norms)
    assert all(m.num_batches_tracked.item() == 8 for m in norms)


def test_users_write_them_in_place_with_dropout(nets):
    modules = [m for n in nets for m in n.module.modules()]
    assert any(getattr(m, "inplace", False) for m in modules)
    assert any(isinstance(m, torch.nn.Dropout) for m in modules)


def test_images_are_smooth_and_audio_band_limited():
    """Neighbouring pixels correlate (i.i.d. noise would not); a tone mixture's power sits in
    few frequency bins (noise spreads it over all)."""
    (image,) = draw("image", (1, 3, 32, 32), 0)
    a, b = image[..., :, :-1].reshape(-1), image[..., :, 1:].reshape(-1)
    assert float(torch.corrcoef(torch.stack([a, b]))[0, 1]) > 0.8
    (audio,) = draw("audio", (1, 1, 4000), 0)
    power = torch.fft.rfft(audio.reshape(-1)).abs() ** 2
    top = power.sort(descending=True).values
    assert float(top[: len(top) // 20].sum() / top.sum()) > 0.9
