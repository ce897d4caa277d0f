"""Cases that tests and benchmarks compile, beside the models they compile: modules from a
function (``Fn``, ``Lambda``), the input specs ``random_inputs`` draws from (shapes,
amplitudes, integer ids, masks, ranges) and the inputs of a case (``case_inputs``); the
elementwise operator cases (``elementwise.py``); the example networks of models/ and their
targets.yaml entries (``networks.py``).

Shared by the tests (tests/tosa/lowering_cases.py re-exports these) and the benchmarks
(bench_operators.py, bench_elementwise.py, bench_upsample.py, example_networks.py, ...). A
package, not files beside the models: every models/*.py holds one model.
"""

from __future__ import annotations

import torch
from torch import nn

# Quantization schemes of the cases (FP: none) and the narrowest TOSA spec each lowers to.
INT8, A16W8, FP = "int8", "a16w8", "fp"
SPECS = {INT8: "TOSA-1.0+INT", A16W8: "TOSA-1.0+INT+int16", FP: "TOSA-1.0+FP"}
CALIBRATION_SAMPLES, TEST_SAMPLES = 4, 2


class Fn(nn.Module):
    """A module from a function of its layers: ``Fn(lambda m, x: m[0](x) + x, conv)``."""

    def __init__(self, fn, *modules):
        super().__init__()
        torch.manual_seed(0)
        self.fn, self.layers = fn, nn.ModuleList(modules)

    def forward(self, *xs):
        return self.fn(self.layers, *xs)


def random_inputs(shapes, seed: int) -> tuple[torch.Tensor, ...]:
    """Uniform inputs in [-1, 1); a shape given as ``(shape, amplitude)`` scales its range, and
    a callable ``(generator) -> tensor`` draws any other input (integer ids, bool masks)."""
    generator = torch.Generator().manual_seed(seed)
    inputs = []
    for spec in shapes:
        if callable(spec):
            inputs.append(spec(generator))
            continue
        shape, amplitude = spec if isinstance(spec[0], (tuple, list)) else (spec, 1.0)
        inputs.append((torch.rand(shape, generator=generator) * 2 - 1) * amplitude)
    return tuple(inputs)


def case_inputs(shapes, calibration: int = CALIBRATION_SAMPLES,
                test: int = TEST_SAMPLES) -> tuple[tuple, list, list]:
    """(example, calibration samples, test samples) of a case: the example from seed 0, the
    calibration samples from seeds 1.., the test samples the example and seeds 100.."""
    example = random_inputs(shapes, 0)
    return (example, [random_inputs(shapes, 1 + i) for i in range(calibration)],
            [example] + [random_inputs(shapes, 100 + i) for i in range(test - 1)])


def integers(shape, high: int, dtype=torch.int64):
    """An input spec for ``random_inputs``: integers in [0, high) - token ids, indices."""
    return lambda generator: torch.randint(0, high, shape, generator=generator, dtype=dtype)


def booleans(shape, p_true: float = 0.7, dtype=torch.bool):
    """An input spec for ``random_inputs``: a mask, True (1) with probability ``p_true``."""
    return lambda generator: (torch.rand(shape, generator=generator) < p_true).to(dtype)


class Lambda(nn.Module):
    """``fn(*inputs)`` as a module: ``Lambda(lambda x: x.sin_())``."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def uniform(shape, low: float, high: float):
    """An input spec for ``random_inputs``: floats uniform in [low, high)."""
    return lambda g: torch.rand(shape, generator=g) * (high - low) + low


def spans(shape, low: int, high: int):
    """An input spec: integers uniform in [low, high) (int64, int32 in the graph)."""
    return lambda g: torch.randint(low, high, shape, generator=g)
