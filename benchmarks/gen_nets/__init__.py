"""Seeded random networks for measuring numerics on models nobody tuned for (issue 27 §2).

- ``families``: the architectures (conv / depthwise / residual / attention), written as
  users write them;
- ``inputs``: structured inputs (smooth images, tone mixtures, log spectrograms);
- ``generate(count, seed)``: ``count`` networks, families in turn, each with BatchNorm
  statistics set from data (the net run in train mode over batches of its own kind of input,
  cumulative averages, then eval), its calibration samples and its test inputs.

``benchmarks/bench_numerics.py`` compares our quantizer with ExecuTorch's on them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from .families import FAMILIES
from .inputs import draw

CALIBRATION = 16  # samples, as a model's calibration block defaults to
TESTS = 64  # inputs the SQNR is measured over
BN_BATCHES = 8  # batches of 8 inputs setting BatchNorm statistics
CALIBRATION_SEED, TEST_SEED, BN_SEED = 1_000, 2_000, 3_000


@dataclass
class Net:
    name: str
    family: str
    module: torch.nn.Module  # eval mode
    kind: str  # inputs.KINDS
    shape: tuple[int, ...]
    seed: int

    def inputs(self, offset: int, count: int) -> list[tuple[torch.Tensor]]:
        base = self.seed * 100_000 + offset
        return [draw(self.kind, self.shape, base + i) for i in range(count)]

    def calibration(self) -> list[tuple[torch.Tensor]]:
        return self.inputs(CALIBRATION_SEED, CALIBRATION)

    def tests(self) -> list[tuple[torch.Tensor]]:
        return self.inputs(TEST_SEED, TESTS)


def _set_batch_norms(net: Net) -> None:
    """BatchNorm running statistics from data: train mode, cumulative averages over
    ``BN_BATCHES`` batches of the net's own inputs, then eval."""
    norms = [m for m in net.module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        net.module.eval()
        return
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None
    net.module.train()
    with torch.no_grad():
        for b in range(BN_BATCHES):
            batch = torch.cat([x for (x,) in net.inputs(BN_SEED + 8 * b, 8)])
            net.module(batch)
    for norm in norms:
        norm.momentum = 0.1
    net.module.eval()


def make_net(index: int, seed: int = 0) -> Net:
    """The ``index``-th network of the set ``seed``: families in turn, everything random
    from (seed, index)."""
    family = list(FAMILIES)[index % len(FAMILIES)]
    rng = random.Random(seed * 1_000_003 + index)
    torch.manual_seed(rng.randrange(2**31))
    module, kind, shape = FAMILIES[family](rng)
    net = Net(f"{family}_{index:02d}", family, module, kind, tuple(shape), seed * 1000 + index)
    _set_batch_norms(net)
    return net


def generate(count: int = 56, seed: int = 0) -> list[Net]:
    """``count`` networks (``make_net`` 0 .. count-1)."""
    return [make_net(i, seed) for i in range(count)]
