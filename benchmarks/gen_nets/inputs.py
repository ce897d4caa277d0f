"""Structured inputs: smooth images and band-limited audio, not i.i.d. noise.

A global pool averages i.i.d. noise away, so a network fed it outputs nearly a constant and its
SQNR measures how that constant rounds. These inputs vary the way sensor data does: images are
low-pass filtered noise, gradients and filled shapes; audio is a mixture of tones under an
envelope, with a little noise.
"""

from __future__ import annotations

import itertools
import math

import torch
import torch.nn.functional as F


def smooth_image(shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """One image ``[1, C, H, W]``: a blend of low-pass noise, a gradient and a few shapes,
    normalised per channel roughly as an ImageNet-normalised photo (values within ~[-2.5, 2.5])."""
    _, channels, height, width = shape

    def uniform(*size, low=0.0, high=1.0):
        return low + (high - low) * torch.rand(*size, generator=generator)

    coarse = max(2, min(height, width) // int(uniform(1, low=3, high=9)))
    noise = torch.randn(1, channels, coarse, coarse, generator=generator)
    image = F.interpolate(noise, size=(height, width), mode="bicubic", align_corners=False)
    ys = torch.linspace(-1, 1, height)[:, None]
    xs = torch.linspace(-1, 1, width)[None, :]
    angle = float(uniform(1, high=2 * math.pi))
    gradient = math.cos(angle) * xs + math.sin(angle) * ys
    image = image + uniform(1, channels, 1, 1, low=-1, high=1) * gradient
    for _ in range(int(uniform(1, low=1, high=5))):
        cy, cx, r = (float(v) for v in uniform(3, low=-0.8, high=0.8))
        radius = 0.15 + abs(r) * 0.5
        if float(uniform(1)) < 0.5:
            mask = ((ys - cy) ** 2 + (xs - cx) ** 2) < radius**2
        else:
            mask = ((ys - cy).abs() < radius) & ((xs - cx).abs() < radius * 0.7)
        image = torch.where(mask, uniform(1, channels, 1, 1, low=-1.5, high=1.5), image)
    image = image - image.mean(dim=(2, 3), keepdim=True)
    return image / image.std(dim=(2, 3), keepdim=True).clamp(min=1e-3) * uniform(1, low=0.6,
                                                                                 high=1.2)


def tones(shape: tuple[int, ...], generator: torch.Generator, rate: int = 8000) -> torch.Tensor:
    """Audio ``[1, C, L]``: per channel a mixture of 2-6 tones (80 Hz - 3 kHz at ``rate``) under
    a smooth attack/decay envelope, plus noise 30-40 dB below, peak near 0.5-0.9."""
    _, channels, length = shape
    t = torch.arange(length, dtype=torch.float32) / rate
    out = torch.zeros(1, channels, length)
    for c in range(channels):
        count = int(torch.randint(2, 7, (1,), generator=generator))
        freqs = 80 * (3000 / 80) ** torch.rand(count, generator=generator)
        amps = torch.rand(count, generator=generator) ** 2 + 0.05
        phases = 2 * math.pi * torch.rand(count, generator=generator)
        wave = (amps[:, None] * torch.sin(2 * math.pi * freqs[:, None] * t + phases[:, None]))
        wave = wave.sum(0)
        centre, width = (float(v) for v in torch.rand(2, generator=generator))
        envelope = torch.exp(-((t / t[-1] - centre) ** 2) / (0.05 + width * 0.3))
        wave = wave * envelope + 0.01 * torch.randn(length, generator=generator)
        peak = 0.5 + 0.4 * float(torch.rand(1, generator=generator))
        out[0, c] = wave / wave.abs().max().clamp(min=1e-6) * peak
    return out


def spectrogram(shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """Log-spectrogram-like features ``[1, F, T]`` (or ``[1, 1, T, F]``): the log power of a tone
    mixture in ``F`` bands over ``T`` frames, mean-normalised as front ends do."""
    frames, bands = (shape[-2], shape[-1]) if len(shape) == 4 else (shape[-1], shape[-2])
    hop = 80
    wave = tones((1, 1, frames * hop + 256), generator)[0, 0]
    window = torch.hann_window(256)
    framed = wave.unfold(0, 256, hop)[:frames] * window
    power = torch.fft.rfft(framed).abs() ** 2  # [T, 129]
    edges = torch.linspace(0, power.shape[1], bands + 1).long()
    banded = torch.stack([power[:, a:max(b, a + 1)].mean(1)
                          for a, b in itertools.pairwise(edges.tolist())], dim=1)
    features = torch.log(banded + 1e-6)
    features = (features - features.mean()) / features.std().clamp(min=1e-3)
    return features.reshape(1, 1, frames, bands) if len(shape) == 4 else features.T[None]


KINDS = {"image": smooth_image, "audio": tones, "spectrogram": spectrogram}


def draw(kind: str, shape: tuple[int, ...], seed: int) -> tuple[torch.Tensor]:
    """One input tuple of ``kind`` (``KINDS``) and ``shape``, the same for the same seed."""
    generator = torch.Generator().manual_seed(seed)
    return (KINDS[kind](shape, generator).float(),)
