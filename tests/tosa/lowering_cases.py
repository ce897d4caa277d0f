"""Test support: export -> quantize -> lower -> verify small torch modules, and run Vela.

Each case writes the export stage's files itself (model.pt2, calibration.pt, test_inputs.pt)
so the quantize, lower and verify stages are exercised exactly as the build runs them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from pipeline.chain.export import export as export_program
from pipeline.stages.lower import lower
from pipeline.stages.quantize import quantize
from pipeline.verify.check import verify
from pipeline.tosa.flatbuffer import operator_names

CALIBRATION_SAMPLES = 4
TEST_SAMPLES = 2
INT8, A16W8, FP = "int8", "a16w8", "fp"
SPECS = {INT8: "TOSA-1.0+INT", A16W8: "TOSA-1.0+INT+int16", FP: "TOSA-1.0+FP"}


@dataclass
class Case:
    folder: Path

    def path(self, name: str) -> Path:
        return self.folder / name

    @property
    def tosa(self) -> Path:
        return self.path("model.tosa")

    def variant(self, name: str) -> Path:
        """The graph of one NPU variant (``u55``, ``u85``) Vela compiles for that family."""
        return self.path(f"model.{name}.tosa")

    def ops(self) -> list[str]:
        """TOSA operators of the lowered graph, constants left out."""
        return [op for op in operator_names(self.tosa) if not op.startswith("CONST")]

    def io(self) -> dict:
        return json.loads(self.path("io.json").read_text())


class Fn(nn.Module):
    """A test module from a function of its layers: ``Fn(lambda m, x: m[0](x) + x, conv)``."""

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


def integers(shape, high: int, dtype=torch.int64):
    """An input spec for ``random_inputs``: integers in [0, high) - token ids, indices."""
    return lambda generator: torch.randint(0, high, shape, generator=generator, dtype=dtype)


def booleans(shape, p_true: float = 0.7, dtype=torch.bool):
    """An input spec for ``random_inputs``: a mask, True (1) with probability ``p_true``."""
    return lambda generator: (torch.rand(shape, generator=generator) < p_true).to(dtype)


def export_case(module: torch.nn.Module, shapes, folder: Path) -> Case:
    """Write what the export stage writes: model.pt2 (normalised), calibration.pt,
    test_inputs.pt."""
    folder.mkdir(parents=True, exist_ok=True)
    module = module.eval()
    example = random_inputs(shapes, 0)
    torch.export.save(export_program(module, example), folder / "model.pt2")
    torch.save(
        [random_inputs(shapes, 1 + i) for i in range(CALIBRATION_SAMPLES)],
        folder / "calibration.pt",
    )
    torch.save(
        [example] + [random_inputs(shapes, 100 + i) for i in range(TEST_SAMPLES - 1)],
        folder / "test_inputs.pt",
    )
    return Case(folder)


def lower_case(
    module: torch.nn.Module,
    shapes,
    folder: Path,
    dtype: str = INT8,
    where: str = "test/lower",
    spec: str | None = None,
    weights: str = "per_channel",
) -> Case:
    """Export, quantize (unless FP; ``weights`` per channel or per tensor) and lower ``module``
    (to ``spec``, default: the scheme's narrowest spec). An INT graph also gets its NPU
    variants (``Case.variant``)."""
    from pipeline.config.npu import NPU_VARIANTS

    case = export_case(module, shapes, folder)
    program = case.path("model.pt2")
    if dtype != FP:
        program = case.path("quantized.pt2")
        quantize(case.path("model.pt2"), case.path("calibration.pt"), program, scheme=dtype,
                 weights=weights)
    variants = {} if dtype == FP else {v: case.variant(v) for v in NPU_VARIANTS}
    lower(program, case.tosa, case.path("io.json"), spec=spec or SPECS[dtype],
          variants=variants, where=where)
    case.path("program").write_text(program.name)
    return case


def verify_case(case: Case, where: str = "test/verify", variants: bool = True) -> dict:
    """verify() on a case, its NPU variants included unless ``variants`` is False."""
    return verify(
        case.path("model.pt2"),
        case.path(case.path("program").read_text()),
        case.tosa,
        case.path("io.json"),
        case.path("test_inputs.pt"),
        case.path("report.json"),
        variants={v: case.variant(v) for v in ("u55", "u85")
                  if variants and case.variant(v).exists()},
        where=where,
    )


def run_case(module: torch.nn.Module, shapes, folder: Path, dtype: str = INT8,
             weights: str = "per_channel") -> tuple[Case, dict]:  # fmt: skip
    """The whole chain; returns the case and the verify report (which must pass)."""
    case = lower_case(module, shapes, folder, dtype, weights=weights)
    return case, verify_case(case)


def run_vela(tosa: Path, accelerator: str, out_dir: Path) -> dict:
    """Compile with the project's Vela stage (raw output); return its figures.json."""
    from pipeline.ethosu.vela import run_vela as vela_stage

    outputs = vela_stage(tosa, out_dir, ["--accelerator-config", accelerator])
    return json.loads(outputs["figures"].read_text())


def graph_before(program_path: Path, pass_name: str, spec: str = "TOSA-1.0+INT"):
    """The FX graph module of a saved program with every FX pass before ``pass_name`` applied,
    plus the pass context - for pass tests that count operators before and after."""
    from pipeline.programs import load_program
    from pipeline.tosa.lowering import attach_constants
    from pipeline.tosa.passes import FX_PASSES, PassContext
    from pipeline.tosa.spec import parse_spec

    program = load_program(program_path)
    attach_constants(program)
    ctx = PassContext(parse_spec(spec), "test")
    for entry in FX_PASSES:
        if entry.name == pass_name:
            return program.graph_module, ctx
        entry.run(program.graph_module, ctx)
    raise KeyError(pass_name)


def count_targets(gm, *names: str) -> int:
    """How many call_function nodes target one of ``names`` (e.g. ``aten.relu.default``)."""
    from pipeline.fx import target_name

    return sum(
        1 for n in gm.graph.nodes if n.op == "call_function" and target_name(n.target) in names
    )
