"""The build graph: ``doit build target=u85-linux`` (README documents every command).

This file is only the index of the graph; pipeline/graph/ builds the task dicts. Loading it
imports no torch, Vela or tosa-tools, so a no-op build stays fast.
"""

from doit import get_var

from pipeline.graph import project, tasks

PROJECT = project.load(get_var)
DOIT_CONFIG = PROJECT.doit_config()


def _stage(stage):
    return tasks.stage_tasks(PROJECT.plan, PROJECT.store, stage, PROJECT.remote,
                             PROJECT.selected)


def task_export():
    """torch.export each model and draw its calibration and test inputs."""
    yield from _stage("export")


def task_quantize():
    """PT2E-quantize exported models (torchao), calibrated."""
    yield from _stage("quantize")


def task_lower():
    """Lower quantized graphs to TOSA flatbuffers."""
    yield from _stage("lower")


def task_verify():
    """Check each TOSA graph in the TOSA reference model against torch."""
    yield from _stage("verify")


def task_vela():
    """Compile TOSA graphs with Vela, once per distinct NPU configuration."""
    yield from _stage("vela")


def task_package():
    """Package Vela's output and IO metadata into model artifacts."""
    yield from _stage("package")


def task_mixed():
    """Split TOSA graphs into NPU and CPU segments (npu: {fallback: cpu}), one artifact each."""
    yield from _stage("mixed")


def task_mixed_verify():
    """Run each CPU segment of a mixed graph under QEMU against the TOSA reference model."""
    yield from _stage("mixed_verify")


def task_vgf():
    """Convert TOSA graphs to .vgf (ML SDK model converter), once per converter options."""
    yield from _stage("vgf")


def task_vgf_check():
    """Run each .vgf on lavapipe + the ML emulation layer against the TOSA reference model."""
    yield from _stage("vgf_check")


def task_runtime():
    """Cross-build the C++ runtime, once per toolchain + CPU + ISA + build type."""
    yield from _stage("runtime")


def task_firmware():
    """Link bare-metal firmware with a model compiled in (targets with ethosu_sdk)."""
    yield from _stage("firmware")


def task_cpu_graph():
    """Write the CPU kernel library's graph and memory plan (npu: null on a Cortex-M/A)."""
    yield from _stage("cpu_graph")


def task_cpu_verify():
    """Run CPU artifacts under QEMU against the TOSA reference model, bit-exact."""
    yield from _stage("cpu_verify")


def task_build():
    """Build targets into build/<target>/: `doit build target=NAME` (all when omitted)."""
    yield from tasks.target_tasks(PROJECT.plan, PROJECT.build, PROJECT.target_configs(),
                                  PROJECT.selected)
