"""Every stage of the build, in pipeline order: the one list the plan, the doit tasks, the keys
and ``dodo.py`` read (each stage declares itself in ``pipeline/stages/<name>.py``)."""

from __future__ import annotations

from pipeline.stages import (
    cpu_graph,
    cpu_verify,
    export,
    firmware,
    lower,
    mixed,
    mixed_verify,
    package,
    quantize,
    runtime,
    verify,
    vela,
    vgf,
    vgf_check,
)

STAGES = {s.name: s for s in (
    export.STAGE, quantize.STAGE, lower.STAGE, verify.STAGE, vela.STAGE, package.STAGE,
    mixed.STAGE, mixed_verify.STAGE, vgf.STAGE, vgf_check.STAGE, runtime.STAGE,
    firmware.STAGE, cpu_graph.STAGE, cpu_verify.STAGE,
)}
