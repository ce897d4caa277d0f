"""The whole chain on a module in memory: export -> quantize -> lower -> verify -> Vela.

The build runs these steps as stages over files (``pipeline/stages/``), one task each, so
that doit and the store can skip what has not changed. Tests and benchmarks that want a
module compiled, nothing cached, call ``compile_model``: the same steps, in the same order,
with the same options a target gives them, and no file written and read back in between
(the lowering gets a copy of its program: ``copied``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.chain.export import export
from pipeline.chain.lower import Lowering, lower
from pipeline.chain.quantize import quantize
from pipeline.chain.vela import npu_config, vela
from pipeline.chain.verify import verify


@dataclass
class Compiled:
    """What ``compile_model`` made, and where it wrote its files.

    ``folder`` holds ``model.tosa``, ``io.json``, ``model.<variant>.tosa`` per NPU variant,
    ``verify.json`` and a folder of Vela outputs per NPU (named after its accelerator)."""

    folder: Path
    program: object  # the float ExportedProgram, normalised
    quantized: object | None  # the q/dq ExportedProgram as lowered (None: a float graph)
    lowering: Lowering
    tests: list  # the test input tuples
    report: dict | None = None  # verify's
    vela: dict = field(default_factory=dict)  # accelerator -> figures.json
    seconds: dict = field(default_factory=dict)  # step -> seconds

    def variant(self, name: str) -> Path:
        """The graph of one NPU variant (``u55``, ``u85``), as Vela compiles it."""
        return self.folder / f"model.{name}.tosa"

    def verify(self, where: str = "compile_model/verify") -> dict:
        """Verify the graph and its NPU variants on the test inputs (``chain.verify``),
        writing ``verify.json``; the report (also kept in ``report``).

        Raises:
            VerificationError: as ``chain.verify``.
        """
        started = time.perf_counter()
        reference = self.program if self.quantized is None else self.quantized
        try:
            self.report = verify(self.program, reference, self.lowering, self.tests,
                                 report=self.folder / "verify.json", where=where)
        finally:
            self.seconds["verify"] = time.perf_counter() - started
        return self.report


def copied(program):
    """A copy of ``program`` for the lowering, which rewrites the program it is given.
    ``copy.deepcopy`` (0.005 s, where a copy through torch.export's serialisation - what the
    next stage of a build loads - takes 0.1 s for a small graph and 30 s for a 49-step LSTM)
    but for one thing: FX names the copied nodes anew and renames a placeholder that shadows
    a Python builtin (a forward argument ``input`` becomes ``input_1``), while the graph
    signature keeps the old name. The original names are put back. The graph lowered from a
    copy is the one lowered from the saved program, byte for byte
    (``tests/chain/test_run.py``)."""
    import copy

    twin = copy.deepcopy(program)
    for node, copied_node in zip(program.graph.nodes, twin.graph.nodes, strict=True):
        copied_node.name = node.name
    twin.graph_module.recompile()
    return twin


def quantize_and_lower(program, calibration, scheme: str | None, spec: str, *, variants=(),
                       where: str = "", **options) -> tuple[object | None, Lowering]:
    """``(q/dq program, lowering)``: ``program`` quantized (unless ``scheme`` is None: a float
    graph) and lowered to ``spec`` with the NPU ``variants``. The lowering gets a copy
    (``copied``), so the program returned is the one the graph came from, untouched:
    verify's reference.

    ``options``: ``chain.quantize``'s (observer, weights, equalization, bias_correction).
    """
    quantized = None
    if scheme is not None:
        quantized, _ = quantize(program, calibration, scheme, where=f"{where}/quantize",
                                **options)
    source = program if quantized is None else quantized
    lowering = lower(copied(source), spec, variants=tuple(variants), where=f"{where}/lower")
    return quantized, lowering


def compile_model(module, example: tuple, calibration: list, tests: list, folder: Path, *,
                  scheme: str | None = "int8", spec: str = "TOSA-1.0+INT+int16", npus=(),
                  check: bool = True, where: str = "chain", **options) -> Compiled:
    """Export ``module`` on ``example``, quantize it with ``scheme`` on the ``calibration``
    input tuples (None: keep it float, for a ``+FP`` spec), lower it to ``spec`` with every NPU
    variant an integer graph has, verify it on the ``tests`` input tuples (unless ``check`` is
    False: then ``Compiled.verify`` does it when the caller wants) and compile it with Vela
    for each of ``npus`` (``NpuConfig``s or accelerator names) from that NPU's variant of the
    graph. Files go to ``folder`` (``Compiled``).

    Raises:
        UserError: what the step that failed raises (its ``where`` ends in the step's name):
            an unsupported operator, a verification failure, an NPU rule, a Vela failure.
    """
    from pipeline.config.npu import NPU_VARIANTS

    folder.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    program = export(module.eval(), tuple(example), f"{where}/export")
    seconds["export"] = time.perf_counter() - started
    variants = NPU_VARIANTS if scheme is not None else ()
    started = time.perf_counter()
    quantized, lowering = quantize_and_lower(program, calibration, scheme, spec,
                                             variants=variants, where=where, **options)
    seconds["quantize + lower"] = time.perf_counter() - started
    lowering.write(folder / "model.tosa", folder / "io.json",
                   {v: folder / f"model.{v}.tosa" for v in variants})
    done = Compiled(folder, program, quantized, lowering, list(tests), seconds=seconds)
    if check:
        done.verify(f"{where}/verify")
    for npu in npus:
        config = npu_config(npu)
        started = time.perf_counter()
        done.vela[config.config] = vela(done.variant(config.variant), config,
                                        folder / config.config, where=f"{where}/vela")
        seconds[f"vela {config.config}"] = time.perf_counter() - started
    return done
