"""Verify: a lowered graph in the TOSA reference model against torch on the same inputs."""

from __future__ import annotations

import tempfile
from pathlib import Path


def verify(float_program, quantized, lowering, samples, *, where: str = "",
           report: Path | None = None, variants=None) -> dict:
    """The verify stage's check (``pipeline.verify.check``) of ``lowering`` and of its NPU
    variants, on the test input tuples ``samples``.

    Args:
        float_program: the float ExportedProgram (the SQNR reference).
        quantized: the q/dq ExportedProgram ``lowering`` came from, as it was before the
            lowering, which rewrites the program it is given (``chain.run`` keeps a copy); the
            float program for a ``+FP`` graph.
        lowering: ``chain.lower``'s result.
        report: where to write the report as JSON (before a failure is raised); None: not
            written.
        variants: the NPU variants to check beside the graph (default: every one
            ``lowering`` has).

    Returns:
        The report.

    Raises:
        VerificationError: a layer differs beyond its bound (the first such layer) or an
            output's SQNR falls short.
    """
    from pipeline.verify.check import check, write_report

    names = list(lowering.variants) if variants is None else list(variants)
    with tempfile.TemporaryDirectory(prefix="chain-verify-") as tmp:
        tosa = Path(tmp) / "model.tosa"
        paths = {name: Path(tmp) / f"model.{name}.tosa" for name in names}
        lowering.write(tosa, None, paths)
        result, failures = check(float_program.module(check_guards=False),
                                 quantized.module(check_guards=False), tosa, lowering.io,
                                 samples, variants=paths, where=where)
    if report is not None:
        write_report(result, report)
    if failures:
        raise failures[0]
    return result
