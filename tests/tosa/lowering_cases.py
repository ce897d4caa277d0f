"""Test support: export -> quantize -> lower -> verify small torch modules, and run Vela.

A case runs the compile chain in memory (``pipeline.chain``: the steps the stages run) and
writes the files each stage would write (model.pt2, calibration.pt, test_inputs.pt,
quantized.pt2, model.tosa, io.json, model.<variant>.tosa), which tests read and may rewrite;
``verify_case`` runs the verify stage's function on those files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from models.cases import (  # noqa: F401 (shared with the benchmarks)
    A16W8,
    FP,
    INT8,
    SPECS,
    Fn,
    booleans,
    case_inputs,
    integers,
    random_inputs,
)
from pipeline.chain.export import export as export_program
from pipeline.chain.run import quantize_and_lower
from pipeline.programs import save_program
from pipeline.tosa.flatbuffer import operator_names
from pipeline.verify.check import verify

CALIBRATION_SAMPLES = 4
TEST_SAMPLES = 2


@dataclass
class Case:
    """A case's folder, and what ``export_case`` drew for it, in memory."""

    folder: Path
    program: object = field(default=None, repr=False)  # the exported float program
    calibration: list = field(default_factory=list, repr=False)
    tests: list = field(default_factory=list, repr=False)

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


def export_case(module: torch.nn.Module, shapes, folder: Path) -> Case:
    """Write what the export stage writes: model.pt2 (normalised), calibration.pt,
    test_inputs.pt."""
    folder.mkdir(parents=True, exist_ok=True)
    module = module.eval()
    example, calibration, tests = case_inputs(shapes, CALIBRATION_SAMPLES, TEST_SAMPLES)
    program = export_program(module, example)
    torch.export.save(program, folder / "model.pt2")
    torch.save(calibration, folder / "calibration.pt")
    torch.save(tests, folder / "test_inputs.pt")
    return Case(folder, program, calibration, tests)


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
    (to ``spec``, default: the scheme's narrowest spec) with the compile chain in memory
    (``pipeline.chain.run``), then write the files the stages would: quantized.pt2,
    model.tosa, io.json and, for an INT graph, its NPU variants (``Case.variant``).
    ``where`` is the lowering's (``<prefix>/lower``; quantize errors say ``<prefix>/quantize``)."""
    from pipeline.config.npu import NPU_VARIANTS

    case = export_case(module, shapes, folder)
    scheme = None if dtype == FP else dtype
    variants = () if dtype == FP else NPU_VARIANTS
    quantized, lowering = quantize_and_lower(
        case.program, case.calibration, scheme, spec or SPECS[dtype], variants=variants,
        where=where.removesuffix("/lower"), weights=weights)
    program = case.path("model.pt2")
    if quantized is not None:
        program = case.path("quantized.pt2")
        save_program(quantized, program)
    lowering.write(case.tosa, case.path("io.json"), {v: case.variant(v) for v in variants})
    case.path("program").write_text(program.name)
    return case


def verify_case(case: Case, where: str = "test/verify", variants: bool = True) -> dict:
    """The verify stage's check on a case's files (a test may have rewritten them since
    ``lower_case``), its NPU variants included unless ``variants`` is False."""
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
    """Compile with the project's Vela stage (raw output) and Vela's own defaults but for the
    accelerator (``pipeline.chain.vela`` gives a target's system config and memory mode
    instead); return its figures.json."""
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
