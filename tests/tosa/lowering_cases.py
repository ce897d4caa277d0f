"""Test support: export -> quantize -> lower -> verify small torch modules, and run Vela.

``lower_case`` runs the compile chain over objects in memory (``pipeline.chain``: the steps
the quantize and lower stages run, with nothing saved and loaded back between them) and
writes only the lowered graph, its NPU variants and io.json. A test that needs one of the
stage files (model.pt2, quantized.pt2, calibration.pt, test_inputs.pt) gets it written when
it asks ``Case.path`` for it. ``export_case`` writes the export stage's files, for tests
that run the stages over files exactly as the build does.
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
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
from pipeline.tosa.flatbuffer import operator_names
from pipeline.verify.check import check, write_report

CALIBRATION_SAMPLES = 4
TEST_SAMPLES = 2


@dataclass
class Case:
    """A case's folder, and the stage files it holds in memory until a test asks for them."""

    folder: Path
    # Stage files not written yet, by name: the objects the chain made in memory
    # (model.pt2, quantized.pt2: programs; calibration.pt, test_inputs.pt: input tuples).
    unwritten: dict = field(default_factory=dict, repr=False)

    def path(self, name: str) -> Path:
        """``folder / name``, written first if it is a stage file held in memory."""
        if name in self.unwritten:
            _write(self.unwritten.pop(name), self.folder / name)
        return self.folder / name

    def held(self, name: str):
        """The object in memory of an unwritten stage file, else loaded from the file."""
        if name in self.unwritten:
            return self.unwritten[name]
        if name.endswith(".pt2"):
            from pipeline.programs import load_program

            return load_program(self.folder / name)
        return torch.load(self.folder / name, weights_only=True)

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


def _write(value, path: Path) -> None:
    if path.suffix == ".pt2":
        torch.export.save(value, path)
    else:
        torch.save(value, path)


def _exported(module: torch.nn.Module, shapes, folder: Path) -> Case:
    """A case holding what the export stage writes, in memory: model.pt2 (normalised),
    calibration.pt, test_inputs.pt."""
    folder.mkdir(parents=True, exist_ok=True)
    module = module.eval()
    example, calibration, tests = case_inputs(shapes, CALIBRATION_SAMPLES, TEST_SAMPLES)
    return Case(folder, {
        "model.pt2": _shared_export(module, shapes, example),
        "calibration.pt": calibration,
        "test_inputs.pt": tests,
    })


# The last programs exported, by (module, input shapes): the cases of one module in int8,
# a16w8 and FP (parametrized side by side) export it once. A hit needs the same module
# object with the same weights (each tensor's storage and version: an in-place edit moves
# it) and mode; each case gets its own deep copy, as the lowering may rewrite its program.
_EXPORTS: OrderedDict = OrderedDict()
_KEEP = 8


def _shared_export(module: torch.nn.Module, shapes, example: tuple):
    key = (id(module), repr(shapes))
    state = (module.training, tuple(
        (name, tuple(t.shape), t.dtype, t.data_ptr(), t._version)
        for name, t in module.state_dict(keep_vars=True).items()))
    hit = _EXPORTS.get(key)
    if hit is not None and hit[0] is module and hit[1] == state:
        _EXPORTS.move_to_end(key)
        return _copied(hit[2])
    program = export_program(module, example)
    _EXPORTS[key] = (module, state, _copied(program))
    while len(_EXPORTS) > _KEEP:
        _EXPORTS.popitem(last=False)
    return program


def _copied(program):
    """A deep copy of ``program`` with its node names (a deep copy renames a placeholder
    named like a builtin: ``input`` -> ``input_1``)."""
    copied = copy.deepcopy(program)
    for old, new in zip(program.graph.nodes, copied.graph.nodes, strict=True):
        if new.name != old.name:
            new.name = old.name
    copied.graph_module.recompile()
    return copied


def export_case(module: torch.nn.Module, shapes, folder: Path) -> Case:
    """Write what the export stage writes: model.pt2 (normalised), calibration.pt,
    test_inputs.pt."""
    case = _exported(module, shapes, folder)
    for name in list(case.unwritten):
        case.path(name)
    return case


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
    (``pipeline.chain.run``), then write model.tosa, io.json and, for an INT graph, its NPU
    variants (``Case.variant``); the programs stay in memory until asked for (``Case.path``).
    ``where`` is the lowering's (``<prefix>/lower``; quantize errors say ``<prefix>/quantize``)."""
    from pipeline.config.npu import NPU_VARIANTS

    case = _exported(module, shapes, folder)
    scheme = None if dtype == FP else dtype
    variants = () if dtype == FP else NPU_VARIANTS
    quantized, lowering = quantize_and_lower(
        case.unwritten["model.pt2"], case.unwritten["calibration.pt"], scheme,
        spec or SPECS[dtype], variants=variants, where=where.removesuffix("/lower"),
        weights=weights)
    name = "model.pt2"
    if quantized is not None:
        name = "quantized.pt2"
        case.unwritten[name] = quantized
    lowering.write(case.tosa, case.path("io.json"), {v: case.variant(v) for v in variants})
    case.path("program").write_text(name)
    return case


def verify_case(case: Case, where: str = "test/verify", variants: bool = True) -> dict:
    """The verify stage's check on a case (``check``, then report.json), its NPU variants
    included unless ``variants`` is False: over the programs in memory, or loaded from the
    files of a case written to disk (``Case(folder)``; a test may have rewritten them)."""
    program = case.held(case.path("program").read_text())
    report, failures = check(
        case.held("model.pt2").module(check_guards=False),
        program.module(check_guards=False),
        case.tosa,
        case.io(),
        case.held("test_inputs.pt"),
        variants={v: case.variant(v) for v in ("u55", "u85")
                  if variants and case.variant(v).exists()},
        where=where,
    )
    write_report(report, case.path("report.json"))
    if failures:
        raise failures[0]
    return report


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
