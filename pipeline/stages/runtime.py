"""Runtime stage: the C++ runtime cross-built with CMake for one toolchain, CPU, ISA and build
type (``pipeline/runtime/cmake.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeline.stages.declare import File, Stage

# Every file under runtime/ and cmake/ is an input (role: its path in the repository).
RUNTIME_SOURCES = {"runtime/*": File("source"), "cmake/*": File("source")}
# What a runtime build leaves for the target, per CMake platform and runner: the NPU backend
# (the Linux runner; bare metal links its runner per model, as firmware), or for a CPU-only
# target the kernel library (and the CPU runner on Linux).
PRODUCTS = {
    ("cortex_a", "npu"): ("ethosu_runner", "libethosu_rt_common.a", "libethosu_rt_cortex_a.a"),
    # npu: {driver: ethosu-driver-stack}: the runner takes --driver accel|ethosu-driver-stack.
    ("cortex_a", "ethosu-driver-stack"): ("ethosu_runner", "libethosu_rt_common.a",
                                          "libethosu_rt_cortex_a.a",
                                          "libethosu_rt_driver_stack.a"),
    ("cortex_m", "npu"): ("libethosu_rt_common.a", "libethosu_rt_cortex_m.a"),
    ("cortex_a", "cpu"): ("tosa_cpu_runner", "libethosu_rt_common.a", "libtosa_cpu.a"),
    ("cortex_m", "cpu"): ("libethosu_rt_common.a", "libtosa_cpu.a"),
}


def build(options: dict, params: dict, outputs: dict[str, Path], where: str, *,
          model_c: Path | None = None, arena: int | None = None,
          io_bytes: int | None = None) -> None:
    """CMake-build the runtime (or a firmware image, with ``model_c`` compiled in, its
    ``arena`` and IO staging buffer ``io_bytes`` sized for it) and copy the products the
    outputs name."""
    from pipeline.runtime.cmake import REPO_ROOT, build_runtime

    products = build_runtime(
        REPO_ROOT, Path(params["cmake_dir"]), toolchain=options["toolchain"], cpu=options["cpu"],
        isa=options["isa"], platform=options["platform"], build_type=options["build_type"],
        model_c=model_c, where=where, runner=options.get("runner", "npu"),
        board=options.get("board"), cpu_arena_bytes=arena, io_bytes=io_bytes,
        sequence=options.get("sequence", False),
        ethosu_sdk=Path(params["ethosu_sdk"]) if "ethosu_sdk" in params else None,
        linux_driver=options.get("driver", "accel"),
        driver_stack=Path(params["driver_stack"]) if "driver_stack" in params else None)
    by_name = {p.name: p for p in products}
    for dest in outputs.values():
        if dest.name not in by_name:
            raise AssertionError(f"runtime build did not list {dest.name}: {sorted(by_name)}")
        shutil.copyfile(by_name[dest.name], dest)
        shutil.copymode(by_name[dest.name], dest)


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    build(options, params, o, where)


def tools(options: dict) -> dict[str, str]:
    """The compiler (its ``--version``, the toolchain file): the C++ build's only tool."""
    from pipeline.runtime.cmake import toolchain_fingerprint

    return {"toolchain": toolchain_fingerprint(options["toolchain"])}


STAGE = Stage(
    name="runtime",
    doc="cross-build the C++ runtime (CMake + Ninja + ccache) for a toolchain and CPU",
    run=run,
    # driver_stack/*: the files a driver-stack checkout (npu.driver_stack) gives the build.
    inputs={**RUNTIME_SOURCES, "driver_stack/*": File("source")},
    outputs={"*": File("binary", "products/{}")},
    packages=(),
    tools=tools,
)
