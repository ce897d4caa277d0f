"""Audio front ends as users write them: torchaudio's MelSpectrogram and MFCC (written out the
way torchaudio computes them, since its wheel does not load against our torch), Whisper's
log-mel, a hand-written torch.stft log-mel, and a keyword spotter with its front end inside.

torchaudio.transforms.MelSpectrogram: stft (hann, center, reflect) -> |.|^power -> mel
filterbank (HTK scale, triangles, no norm) as ``spec.transpose(-1, -2) @ fb``; MFCC: that,
``AmplitudeToDB`` (10 log10, clamp 1e-10) and an orthonormal DCT-II matrix.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def _hz_to_mel(f):
    return 2595.0 * math.log10(1.0 + f / 700.0)


def mel_filterbank(n_freqs: int, n_mels: int, sample_rate: int, f_min=0.0, f_max=None):
    """[n_freqs, n_mels] triangular filters on the HTK mel scale (torchaudio's
    ``melscale_fbanks`` with norm=None)."""
    f_max = f_max or sample_rate / 2
    all_freqs = torch.linspace(0, sample_rate // 2, n_freqs)
    m_pts = torch.linspace(_hz_to_mel(f_min), _hz_to_mel(f_max), n_mels + 2)
    f_pts = 700.0 * (10 ** (m_pts / 2595.0) - 1.0)
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return torch.clamp(torch.minimum(down, up), min=0.0)


def dct_matrix(n_mfcc: int, n_mels: int) -> torch.Tensor:
    """[n_mels, n_mfcc] orthonormal DCT-II (torchaudio's ``create_dct(norm="ortho")``)."""
    n = torch.arange(n_mels, dtype=torch.float64)
    k = torch.arange(n_mfcc, dtype=torch.float64).unsqueeze(1)
    dct = torch.cos(math.pi / n_mels * (n + 0.5) * k)
    dct[0] *= 1.0 / math.sqrt(2.0)
    return (dct * math.sqrt(2.0 / n_mels)).t().float()


class MelSpectrogram(nn.Module):
    def __init__(self, sample_rate=16000, n_fft=400, win_length=None, hop_length=None,
                 n_mels=40, power=2.0, window_fn=torch.hann_window, center=True,
                 pad_mode="reflect", normalized=False):
        super().__init__()
        self.n_fft, self.power, self.center, self.pad_mode = n_fft, power, center, pad_mode
        self.win_length = win_length or n_fft
        self.hop_length = hop_length or self.win_length // 2
        self.normalized = normalized
        self.register_buffer("window", window_fn(self.win_length))
        self.register_buffer("fb", mel_filterbank(n_fft // 2 + 1, n_mels, sample_rate))

    def forward(self, waveform):
        spec = torch.stft(waveform, self.n_fft, self.hop_length, self.win_length, self.window,
                          self.center, self.pad_mode, self.normalized, return_complex=True)
        spec = spec.abs().pow(self.power)
        return torch.matmul(spec.transpose(-1, -2), self.fb).transpose(-1, -2)


class LogMel(nn.Module):
    """MelSpectrogram then ``log(x + 1e-6)``, as KWS recipes write it."""

    def __init__(self, **options):
        super().__init__()
        self.mel = MelSpectrogram(**options)

    def forward(self, waveform):
        return torch.log(self.mel(waveform) + 1e-6)


class MFCC(nn.Module):
    """torchaudio.transforms.MFCC: log-mel in dB (AmplitudeToDB, power) times the DCT."""

    def __init__(self, n_mfcc=13, n_mels=40, **options):
        super().__init__()
        self.mel = MelSpectrogram(n_mels=n_mels, **options)
        self.register_buffer("dct", dct_matrix(n_mfcc, n_mels))

    def forward(self, waveform):
        mel = self.mel(waveform)
        db = 10.0 * torch.log10(torch.clamp(mel, min=1e-10))
        return torch.matmul(db.transpose(-1, -2), self.dct).transpose(-1, -2)


class WhisperLogMel(nn.Module):
    """Whisper's log_mel_spectrogram: stft(400, 160, hann) without its last frame, power,
    mel, log10 clamped at 1e-10, floored at the maximum - 8, (x + 4) / 4."""

    def __init__(self, n_mels=80):
        super().__init__()
        self.register_buffer("window", torch.hann_window(400))
        self.register_buffer("filters", mel_filterbank(201, n_mels, 16000).t())

    def forward(self, audio):
        stft = torch.stft(audio, 400, 160, window=self.window, return_complex=True)
        magnitudes = stft[..., :-1].abs() ** 2
        mel_spec = self.filters @ magnitudes
        log_spec = torch.clamp(mel_spec, min=1e-10).log10()
        log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
        return (log_spec + 4.0) / 4.0


class HandStft(nn.Module):
    """A hand-written front end: rfft-free, view_as_real power, hamming window, no centre."""

    def __init__(self, n_fft=256, hop=128, n_mels=32):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hamming_window(n_fft))
        self.register_buffer("mel", mel_filterbank(n_fft // 2 + 1, n_mels, 16000))

    def forward(self, wave):
        spec = torch.stft(wave, self.n_fft, self.hop, window=self.window, center=False,
                          return_complex=True)
        ri = torch.view_as_real(spec)
        power = ri[..., 0] ** 2 + ri[..., 1] ** 2
        mel = power.transpose(1, 2) @ self.mel
        return torch.log(mel + 1e-6)


def speech_like(samples: int = 4000, batch: int = 1, seed: int = 0,
                sample_rate: int = 16000) -> torch.Tensor:
    """[batch, samples] of voiced-speech-like audio: a gliding pitch's harmonics shaped by
    three formants, syllable-rate amplitude, and noise 30 dB down - not i.i.d. noise."""
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(samples, dtype=torch.float64) / sample_rate
    out = []
    for _ in range(batch):
        f0 = 110 + 90 * torch.rand(1, generator=g).item()
        glide = f0 * (1 + 0.2 * torch.sin(2 * math.pi * 3 * t))
        phase = 2 * math.pi * torch.cumsum(glide, 0) / sample_rate
        formants = (500 + 400 * torch.rand(3, generator=g)) * torch.tensor([1.0, 2.5, 5.0])
        wave = torch.zeros_like(t)
        for h in range(1, 30):
            freq = h * f0
            gain = sum(1 / (1 + ((freq - f) / 120) ** 2) for f in formants.tolist()) / h ** 0.5
            wave += gain * torch.sin(h * phase)
        envelope = 0.55 + 0.45 * torch.sin(2 * math.pi * 4 * t + 6 * torch.rand(1, generator=g))
        wave = wave * envelope
        wave = wave / wave.abs().max() * 0.5
        noise = torch.randn(samples, generator=g, dtype=torch.float64)
        out.append(wave + noise * wave.std() * 10 ** (-30 / 20))
    return torch.stack(out).float()
