"""Test support: export -> quantize -> lower -> verify small torch modules, and run Vela.

``lower_case`` runs the compile chain over objects in memory (``pipeline/chain``: the steps
the quantize and lower stages run, with nothing saved and loaded back between them) and
writes only the lowered graph, its NPU variants and io.json. A test that needs one of the
stage files (model.pt2, quantized.pt2, calibration.pt, test_inputs.pt) gets it written when
it asks ``Case.path`` for it. ``export_case`` writes the export stage's files, for tests
that run the stages over files exactly as the build does.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from pipeline.chain.export import export as export_program
from pipeline.chain.lower import lower as lower_program
from pipeline.chain.quantize import quantize_program
from pipeline.tosa.flatbuffer import operator_names
from pipeline.verify.check import verify_programs

CALIBRATION_SAMPLES = 4
TEST_SAMPLES = 2
INT8, A16W8, FP = "int8", "a16w8", "fp"
SPECS = {INT8: "TOSA-1.0+INT", A16W8: "TOSA-1.0+INT+int16", FP: "TOSA-1.0+FP"}


@dataclass
class Case:
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


def _write(value, path: Path) -> None:
    if path.suffix == ".pt2":
        torch.export.save(value, path)
    else:
        torch.save(value, path)


def _copy(program):
    """A deep copy of an ExportedProgram (0.02 s, where a save and load takes 0.3 s). fx names
    the copied nodes anew and renames one named after a Python builtin (a forward argument
    ``input`` becomes ``input_1``): the original names are put back, which the graph
    signature refers to."""
    copied = copy.deepcopy(program)
    for node, twin in zip(program.graph.nodes, copied.graph.nodes, strict=True):
        twin.name = node.name
    copied.graph_module.recompile()
    return copied


def _exported(module: torch.nn.Module, shapes, folder: Path) -> Case:
    """A case holding what the export stage writes, in memory: model.pt2 (normalised),
    calibration.pt, test_inputs.pt."""
    folder.mkdir(parents=True, exist_ok=True)
    module = module.eval()
    example = random_inputs(shapes, 0)
    return Case(folder, {
        "model.pt2": export_program(module, example),
        "calibration.pt": [random_inputs(shapes, 1 + i) for i in range(CALIBRATION_SAMPLES)],
        "test_inputs.pt": [example] + [random_inputs(shapes, 100 + i)
                                       for i in range(TEST_SAMPLES - 1)],
    })


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
    (to ``spec``, default: the scheme's narrowest spec). An INT graph also gets its NPU
    variants (``Case.variant``)."""
    from pipeline.config.npu import NPU_VARIANTS

    case = _exported(module, shapes, folder)
    name = "model.pt2"
    if dtype != FP:
        name = "quantized.pt2"
        case.unwritten[name] = quantize_program(
            case.unwritten["model.pt2"], case.unwritten["calibration.pt"], dtype,
            where="", weights=weights)
    variants = {} if dtype == FP else {v: case.variant(v) for v in NPU_VARIANTS}
    # The lowering's FX passes rewrite the program they are given: they get a copy, so the
    # program stays as the quantize step made it, for verify and for the tests.
    lowering = lower_program(_copy(case.unwritten[name]), spec or SPECS[dtype],
                             variants=tuple(variants), where=where)
    lowering.write(case.tosa, case.path("io.json"), variants)
    case.path("program").write_text(name)
    return case


def verify_case(case: Case, where: str = "test/verify", variants: bool = True) -> dict:
    """verify() on a case, its NPU variants included unless ``variants`` is False: over the
    programs in memory (``verify_programs``), or loaded from the files of a case written to
    disk (``Case(folder)``)."""
    return verify_programs(
        case.held("model.pt2"),
        case.held(case.path("program").read_text()),
        case.tosa,
        case.path("io.json"),
        case.held("test_inputs.pt"),
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
