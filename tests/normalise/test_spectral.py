"""stft / rfft / fft of real input in real operators (pipeline/normalise/spectral.py): the
normalised program against torch in float (rtol 1e-4 of the largest value) over a grid of
the options users set, and no complex value left."""

import pytest
import torch

from models.zoo import front_ends
from pipeline.normalise import normalise
from pipeline.tosa.registry import lowered_targets

pytestmark = pytest.mark.needs_torch

aten = torch.ops.aten


class Stft(torch.nn.Module):
    """torch.stft as users call it, then one of the ways they read the complex result."""

    def __init__(self, n_fft, hop, win, window, center, mode, normalized, onesided, read):
        super().__init__()
        self.options = (n_fft, hop, win, center, mode, normalized, onesided)
        self.read = read
        self.register_buffer("window", None if window is None else window(win or n_fft))

    def forward(self, x):
        n_fft, hop, win, center, mode, normalized, onesided = self.options
        z = torch.stft(x, n_fft, hop, win, self.window, center, mode, normalized, onesided,
                       return_complex=True)
        if self.read == "power":
            return z.abs().pow(2)
        if self.read == "magnitude":
            return z.abs()
        if self.read == "view_as_real":
            return torch.view_as_real(z)
        ri = torch.view_as_real(z)
        return ri[..., 0] ** 2 + ri[..., 1] ** 2


def _normalised(module, *inputs):
    return normalise(torch.export.export(module.eval(), inputs), lowered_targets())


def _assert_close(module, *inputs):
    program = _normalised(module, *inputs)
    vals = [n.meta.get("val") for n in program.graph.nodes]
    assert not any(isinstance(v, torch.Tensor) and v.is_complex() for v in vals)
    got, want = program.module()(*inputs), module(*inputs)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4 * float(want.abs().max()))
    return program


GRID = [
    # n_fft, hop, win_length, window, center, pad_mode, normalized, onesided, read
    (64, 16, None, torch.hann_window, True, "reflect", False, True, "power"),
    (64, 16, 48, torch.hamming_window, True, "constant", False, True, "magnitude"),
    (64, 25, None, None, False, "reflect", True, True, "view_as_real"),
    (100, 25, 48, torch.hann_window, True, "reflect", True, False, "re2"),
    (100, 64, None, torch.hamming_window, False, "reflect", False, False, "power"),
    (100, 40, None, torch.hann_window, True, "reflect", False, True, "magnitude"),
    (64, 64, None, torch.hann_window, True, "constant", True, True, "re2"),
    (256, 128, None, torch.hann_window, True, "reflect", False, True, "power"),
]


@pytest.mark.parametrize("case", GRID, ids=lambda c: "-".join(
    str(getattr(v, "__name__", v)) for v in c))
def test_stft_matches_torch(case):
    _assert_close(Stft(*case), torch.randn(2, 999))


def test_stft_of_a_1d_signal_and_a_short_one():
    """An unbatched signal, and one shorter than two frames (its reflect padding kept)."""
    _assert_close(Stft(64, 16, None, torch.hann_window, True, "reflect", False, True, "power"),
                  torch.randn(500))
    _assert_close(Stft(64, 16, None, torch.hann_window, True, "reflect", False, True, "power"),
                  torch.randn(1, 100))


def test_reflect_padding_is_folded_into_the_edge_frames():
    """center=True with reflect: no one-sample slices, one CONV1D for the inner frames."""
    program = _assert_close(
        Stft(256, 128, None, torch.hann_window, True, "reflect", False, True, "power"),
        torch.randn(1, 4000))
    targets = [n.target for n in program.graph.nodes if n.op == "call_function"]
    assert targets.count(aten.conv1d.default) == 1
    assert targets.count(aten.slice.Tensor) < 10


class Fft(torch.nn.Module):
    def __init__(self, kind, n=None, dim=-1, norm=None):
        super().__init__()
        self.kind, self.n, self.dim, self.norm = kind, n, dim, norm

    def forward(self, x):
        fn = torch.fft.rfft if self.kind == "rfft" else torch.fft.fft
        z = fn(x, self.n, self.dim, self.norm)
        return z.abs(), torch.view_as_real(z), z.real, z.imag


@pytest.mark.parametrize("kind,n,dim,norm", [
    ("rfft", None, -1, None), ("rfft", 48, -1, "ortho"), ("fft", None, 1, "forward"),
    ("fft", 80, -1, "backward")])
def test_fft_of_real_input_matches_torch(kind, n, dim, norm):
    x = torch.randn(2, 64, 64)
    program = _normalised(Fft(kind, n, dim, norm), x)
    for got, want in zip(program.module()(x), Fft(kind, n, dim, norm)(x)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4 * float(want.abs().max()))


def test_view_as_complex_feeding_abs():
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.view_as_complex(x.reshape(4, 8, 2)).abs() * 3

    _assert_close(M(), torch.randn(4, 16))


@pytest.mark.parametrize("name,module", [
    ("mel_spectrogram", front_ends.MelSpectrogram(n_fft=256, hop_length=128, n_mels=32)),
    ("mfcc", front_ends.MFCC(n_fft=256, hop_length=128)),
    ("whisper", front_ends.WhisperLogMel(n_mels=40)),
    ("hand_stft", front_ends.HandStft()),
])
def test_front_ends_match_torch(name, module):
    _assert_close(module, front_ends.speech_like(4000))


def test_a_complex_value_read_another_way_still_gets_the_clear_error(tmp_path):
    """angle() has no real form here: the lowering names it, no traceback."""
    from pipeline.errors import UnsupportedOperatorError
    from tests.tosa.lowering_cases import lower_case

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.fft.rfft(x).angle()

    with pytest.raises(UnsupportedOperatorError, match="Complex tensors"):
        lower_case(M(), [(1, 32)], tmp_path, where="test/lower")
