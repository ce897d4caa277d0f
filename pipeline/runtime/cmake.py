"""Runtime build stage: configure and build the C++ runtime with CMake for one target.

One build directory per (toolchain, CPU, ISA, platform, build type, SDK, model): CMake
configures it with the toolchain file from ``cmake/toolchains/<toolchain>.cmake``, Ninja,
and ccache as compiler launcher, then builds the default target. The product files (the
runtime libraries, and the runner when it can be linked) are listed by CMake in
``<build_dir>/ethosu_rt_outputs.txt``. CMake runs with a fresh cache and without the
environment variables that would change the binaries (``BUILD_ENV_DROPPED``): what it builds
depends on the stage's options, the runtime sources and the toolchain only.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from pipeline.errors import StageError

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLCHAIN_DIR = REPO_ROOT / "cmake" / "toolchains"
TOOLCHAINS = ("arm-none-eabi-gcc", "aarch64-linux-gnu-gcc", "aarch64-linux-musl-zig", "host")
# CMake's platform names, and the config's names for the same platforms.
PLATFORMS = {
    "cortex_m": "cortex_m",
    "cortex_a": "cortex_a",
    "host": "host",
    "baremetal": "cortex_m",
    "linux": "cortex_a",
}
BUILD_TYPES = ("Release", "Debug", "RelWithDebInfo", "MinSizeRel")
LINUX_DRIVERS = ("accel", "ethosu-driver-stack")  # ETHOSU_RT_LINUX_DRIVER
# Environment variables that change what CMake, the compilers, the linker or zig produce.
# None of them is part of the stage key, so each is dropped before CMake runs: with
# CFLAGS=-g set, a build would otherwise store debug binaries under a Release key (and a
# later build without it would restore them). The binaries depend on targets.yaml (cpu, isa,
# build_type), the runtime sources and the toolchain files only. Sources: CMake 3.25's
# cmake-env-variables(7); GCC 12's "Environment Variables Affecting GCC" and its cpp
# manual; ld(1) and BFD; clang's driver; `python -m ziglang env`. Not dropped:
# <PackageName>_ROOT (read by find_package() only, which the runtime never calls), and what
# changes no output: PATH (the compiler and CMake it finds are fingerprinted), HOME, TMPDIR,
# LANG/LC_* (diagnostics), CCACHE_*, ZIG_GLOBAL_CACHE_DIR, ZIG_LOCAL_CACHE_DIR and
# ETHOSU_RT_ZIG_PYTHON.
BUILD_ENV_DROPPED = frozenset({
    # CMake: the compilers and flags a new cache starts from (documented per language, for
    # every language CMake knows, in case an SDK's CMake project enables one).
    "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "OBJC", "OBJCFLAGS", "OBJCXX",
    "OBJCXXFLAGS", "FC", "FFLAGS", "CUDACXX", "CUDAFLAGS", "CUDAHOSTCXX", "CUDAARCHS",
    "HIPCXX", "HIPFLAGS", "HIPHOSTCXX", "ISPC", "ISPCFLAGS", "RC", "RCFLAGS", "SWIFTC",
    "CSFLAGS", "ADSP_ROOT", "MACOSX_DEPLOYMENT_TARGET",
    # CMake ignores CPPFLAGS; dropped so that no script of an SDK honours it either.
    "CPPFLAGS",
    # GCC and its preprocessor: header/library search paths, the driver's program prefixes,
    # __DATE__/__TIME__, a second -g compile, side files of dependency output.
    "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH", "LIBRARY_PATH",
    "GCC_EXEC_PREFIX", "COMPILER_PATH", "SOURCE_DATE_EPOCH", "GCC_COMPARE_DEBUG",
    "DEPENDENCIES_OUTPUT", "SUNPRO_DEPENDENCIES",
    # GNU ld and BFD: default rpath, object format and emulation.
    "LD_RUN_PATH", "GNUTARGET", "LDEMULATION",
    # clang (behind zig cc) and zig: extra driver options, include paths, its libc and lib dir.
    "CCC_OVERRIDE_OPTIONS", "OBJCPLUS_INCLUDE_PATH", "ZIG_LIB_DIR", "ZIG_LIBC",
    "NIX_CFLAGS_COMPILE", "NIX_CFLAGS_LINK", "NIX_LDFLAGS", "PKG_CONFIG",
})
# Every CMAKE_* (CMAKE_TOOLCHAIN_FILE, CMAKE_GENERATOR, CMAKE_BUILD_TYPE, CMAKE_PREFIX_PATH,
# CMAKE_<LANG>_COMPILER_LAUNCHER, ...) and ASM<DIALECT> / ASM<DIALECT>FLAGS (ASM, ASMFLAGS,
# ASM_NASM, ...).
BUILD_ENV_DROPPED_PREFIXES = ("CMAKE_", "ASM")
OUTPUTS_FILE = "ethosu_rt_outputs.txt"


def _compiler_version_argv(toolchain: str) -> list[str]:
    return {
        "arm-none-eabi-gcc": ["arm-none-eabi-g++", "--version"],
        "aarch64-linux-gnu-gcc": ["aarch64-linux-gnu-g++", "--version"],
        "aarch64-linux-musl-zig": [sys.executable, "-m", "ziglang", "c++", "--version"],
        "host": ["c++", "--version"],
    }[toolchain]


def _check_choice(where: str, field: str, value, allowed) -> None:
    if value not in allowed:
        raise StageError(where, f"{field} must be one of {', '.join(allowed)}; got {value!r}")


def _run(argv: list[str], where: str, what: str, env: dict | None = None) -> str:
    try:
        result = subprocess.run(argv, capture_output=True, text=True, env=env)
    except FileNotFoundError:
        raise StageError(
            where, f"{what}: {argv[0]} must be installed (see bootstrap.sh); it was not found", argv
        )
    if result.returncode != 0:
        # CMake prints FATAL_ERROR messages on stderr, compiler errors on stdout (Ninja).
        raise StageError(
            where,
            f"{what} (exit status {result.returncode})",
            argv,
            result.stdout + "\n" + result.stderr,
        )
    return result.stdout


def _dropped(name: str) -> bool:
    return name in BUILD_ENV_DROPPED or name.startswith(BUILD_ENV_DROPPED_PREFIXES)


def build_environment(toolchain: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment CMake, Ninja and the compilers run with.

    Args:
        toolchain: one of ``TOOLCHAINS``.
        environ: the calling environment (default ``os.environ``).
    Returns:
        ``environ`` without the variables of ``BUILD_ENV_DROPPED`` (and its prefixes): PATH,
        HOME, TMPDIR, the locale and ccache's ``CCACHE_*`` settings stay. For the zig
        toolchain, ``ETHOSU_RT_ZIG_PYTHON`` names this Python (the wrapper scripts run
        ``python -m ziglang`` and this interpreter has it).
    """
    environ = os.environ if environ is None else environ
    env = {name: value for name, value in environ.items() if not _dropped(name)}
    if toolchain == "aarch64-linux-musl-zig":
        env["ETHOSU_RT_ZIG_PYTHON"] = sys.executable
    return env


def build_runtime(
    source_dir: Path,
    build_dir: Path,
    *,
    toolchain: str,
    cpu: str,
    isa: str | None,
    platform: str,
    build_type: str,
    ethosu_sdk: Path | None = None,
    model_c: Path | None = None,
    where: str = "runtime_build",
    runner: str = "npu",
    board: str | None = None,
    cpu_arena_bytes: int | None = None,
    sequence: bool = False,
    io_bytes: int | None = None,
    linux_driver: str = "accel",
    driver_stack: Path | None = None,
) -> list[Path]:
    """Configure (if needed) and build the runtime; return the produced files.

    Args:
        source_dir: the repository root (holding ``runtime/`` and ``cmake/``).
        build_dir: the CMake build directory (created if missing, reused if present).
        toolchain: one of ``TOOLCHAINS``; selects ``cmake/toolchains/<toolchain>.cmake``.
        cpu: ``ETHOSU_RT_CPU`` (e.g. ``cortex-m55``, ``cortex-a55``; ignored by ``host``).
        isa: ``ETHOSU_RT_ISA`` for Cortex-M (``scalar``/``dsp``/``mve``), None otherwise.
        platform: ``cortex_m``/``cortex_a``/``host`` (or the config's ``baremetal``/``linux``).
        build_type: one of ``BUILD_TYPES``.
        ethosu_sdk: the Ethos-U SDK for the bare-metal firmware (None: libraries only).
        model_c: the model as a C array (``c_array.write_c_array``) for the bare-metal runner.
        where: ``target/stage`` for error messages.
        runner: ``npu`` (the Ethos-U backend and runner) or ``cpu`` (the TOSA kernel library
            and the CPU runner, ``ETHOSU_RT_RUNNER=cpu``).
        board: bare metal: the board the firmware is linked for (``ETHOSU_RT_BOARD``,
            ``config/boards.py``); None for the default MPS3 AN547.
        cpu_arena_bytes: bare-metal CPU firmware: its static arena (the memory plan's
            arena; ``ETHOSU_RT_CPU_ARENA_BYTES``), None for CMake's default.
        io_bytes: bare-metal firmware: its static IO staging buffer (``ETHOSU_RT_IO_BYTES``,
            ``artifact.io_staging_bytes`` of the model compiled in), None for CMake's default.
        sequence: bare-metal NPU firmware whose model is a sequence artifact (NPU + CPU
            segments, ``ETHOSU_RT_SEQUENCE``): the runner links the kernel library.
        linux_driver: Linux builds: ``accel`` (the DRM accel backend only) or
            ``ethosu-driver-stack`` (also the backend over Arm's driver library,
            ``ETHOSU_RT_LINUX_DRIVER``).
        driver_stack: with ``ethosu-driver-stack``, the checkout to build against
            (``ETHOSU_RT_DRIVER_STACK_DIR``); None lets CMake fetch the pinned tag.
    Returns:
        Absolute paths of the built libraries and runner, as CMake lists them.
    Raises:
        StageError: an option is not allowed, a tool is missing, or CMake/the build failed.
    """
    _check_choice(where, "toolchain", toolchain, TOOLCHAINS)
    _check_choice(where, "platform", platform, tuple(PLATFORMS))
    _check_choice(where, "build_type", build_type, BUILD_TYPES)
    if shutil.which("ccache") is None:
        raise StageError(
            where, "ccache must be installed (apt-get install ccache); it was not found on PATH"
        )
    source_dir, build_dir = Path(source_dir).resolve(), Path(build_dir).resolve()
    configure = [
        "cmake",
        # A new cache each time: CMake seeds CMAKE_<LANG>_FLAGS and friends from the
        # environment of the *first* configure and keeps them, so a build folder configured
        # by an older version with CFLAGS=-g would go on building debug objects.
        "--fresh",
        "-G",
        "Ninja",
        "-S",
        str(source_dir / "runtime"),
        "-B",
        str(build_dir),
        f"-DCMAKE_TOOLCHAIN_FILE={source_dir / 'cmake' / 'toolchains' / f'{toolchain}.cmake'}",
        f"-DETHOSU_RT_PLATFORM={PLATFORMS[platform]}",
        f"-DCMAKE_BUILD_TYPE={build_type}",
        "-DCMAKE_C_COMPILER_LAUNCHER=ccache",
        "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache",
        f"-DETHOSU_RT_CPU={cpu if cpu != 'host' else ''}",
        f"-DETHOSU_RT_ISA={isa or ''}",
        f"-DETHOSU_SDK={Path(ethosu_sdk).resolve() if ethosu_sdk else ''}",
        f"-DETHOSU_RT_MODEL_C={Path(model_c).resolve() if model_c else ''}",
        f"-DETHOSU_RT_RUNNER={runner}",
        f"-DETHOSU_RT_BOARD={board or 'mps3_an547'}",
    ]
    if sequence:
        configure.append("-DETHOSU_RT_SEQUENCE=ON")
    if cpu_arena_bytes is not None:
        configure.append(f"-DETHOSU_RT_CPU_ARENA_BYTES={max(int(cpu_arena_bytes), 16)}")
    if io_bytes is not None:
        configure.append(f"-DETHOSU_RT_IO_BYTES={max(int(io_bytes), 16)}")
    if linux_driver != "accel":  # the accel build's command line stays as it always was
        _check_choice(where, "linux_driver", linux_driver, LINUX_DRIVERS)
        configure.append(f"-DETHOSU_RT_LINUX_DRIVER={linux_driver}")
        configure.append(f"-DETHOSU_RT_DRIVER_STACK_DIR={Path(driver_stack).resolve() if driver_stack else ''}")
    env = build_environment(toolchain)
    _run(configure, where, "CMake configure of the runtime failed", env)
    _run(["cmake", "--build", str(build_dir)], where, "runtime build failed", env)
    listing = build_dir / OUTPUTS_FILE
    paths = [Path(line) for line in listing.read_text().splitlines() if line.strip()]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise StageError(
            where,
            f"the build must produce every file CMake lists in {listing}; "
            f"missing {', '.join(missing)}",
        )
    return paths


@functools.lru_cache(maxsize=None)
def toolchain_fingerprint(toolchain: str) -> str:
    """Digest of everything about ``toolchain`` that changes the runtime binaries.

    Covers the compiler's ``--version`` output, ``cmake --version``, and the contents of
    every file under ``cmake/`` (the toolchain file, the zig wrapper scripts and the CMake
    modules the runtime includes). Runtime sources are not included: they are stage inputs.

    Raises:
        StageError: ``toolchain`` is unknown or its compiler or CMake is missing.
    """
    where = f"runtime_build/{toolchain}"
    _check_choice(where, "toolchain", toolchain, TOOLCHAINS)
    digest = hashlib.sha256()
    for argv in (_compiler_version_argv(toolchain), ["cmake", "--version"]):
        digest.update(" ".join(argv[-2:]).encode() + b"\0")
        output = _run(argv, where, "tool version query failed", build_environment(toolchain))
        digest.update(output.encode() + b"\0")
    cmake_dir = TOOLCHAIN_DIR.parent
    for path in sorted(p for p in cmake_dir.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(cmake_dir)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
