"""Helpers for the runtime tests: CMake builds of runtime/ and runs of what they produce.

Each test module builds its configuration once (a module-scoped fixture) into a build
directory of the run (``tests/warm.py``: shared by the xdist workers, one build at a time in
a folder; ``$ETHOSU_TEST_BUILDS`` keeps them across runs); ccache covers fresh directories. A
tool that bootstrap.sh installs but is missing fails the test instead of skipping it.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.warm import kept_folder, locked

REPO = Path(__file__).resolve().parents[2]
TOOLCHAINS = REPO / "cmake" / "toolchains"


def build_dir(request, name: str) -> Path:
    """The run's build directory ``runtime-<name>`` (``tests/warm.py``'s ``kept_folder``)."""
    folder = kept_folder(request.getfixturevalue("tmp_path_factory")) / f"runtime-{name}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def require(tool: str) -> str:
    """Path of ``tool``; fails the test when it is not installed."""
    path = shutil.which(tool)
    if path is None:
        pytest.fail(f"{tool} must be installed (bootstrap.sh installs it); not found on PATH")
    return path


def run(argv: list[str], *, cwd: Path | None = None, env: dict | None = None,
        timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``argv``; with ``check``, fail the test showing the output tail on error."""
    result = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=timeout)
    if check and result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-40:])
        pytest.fail(f"{' '.join(map(str, argv))} exited {result.returncode}:\n{tail}")
    return result


def configure_argv(build_dir: Path, toolchain: str, platform: str, *options: str,
                   build_type: str = "Release") -> list[str]:
    return ["cmake", "-G", "Ninja", "-S", REPO / "runtime", "-B", build_dir,
            f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAINS / (toolchain + '.cmake')}",
            f"-DETHOSU_RT_PLATFORM={platform}", f"-DCMAKE_BUILD_TYPE={build_type}",
            "-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache",
            *options]


def cmake_build(build_dir: Path, toolchain: str, platform: str, *options: str,
                build_type: str = "Release", targets: tuple[str, ...] = (),
                env: dict | None = None) -> Path:
    """Configure and build; returns ``build_dir``."""
    for tool in ("cmake", "ninja", "ccache"):
        require(tool)
    build = ["cmake", "--build", build_dir]
    if targets:
        build += ["--target", *targets]
    with locked(build_dir):  # two modules (two workers) may build the same directory
        run(configure_argv(build_dir, toolchain, platform, *options, build_type=build_type),
            env=env)
        run(build, env=env, timeout=900)
    return build_dir


def ctest(build_dir: Path) -> str:
    """Run every registered test; returns ctest's output."""
    result = run(["ctest", "--output-on-failure", "--test-dir", build_dir], timeout=600)
    assert "100% tests passed" in result.stdout, result.stdout
    return result.stdout


def zig_env() -> dict:
    """Environment for the zig wrappers: the Python running the tests has ziglang."""
    import os

    return {**os.environ, "ETHOSU_RT_ZIG_PYTHON": sys.executable}


# --- model artifacts made by the real packager (pipeline/ethosu/package.py) ---------------

def cop1(words: list[int], config: int = 0x00001807, ident: int = 0x10066001) -> bytes:
    """A COP1 payload laid out as Vela writes it (command stream at byte 32)."""
    header = 0x2 | (((len(words) >> 16) & 0xFF) << 8) | ((len(words) & 0xFFFF) << 16)
    return struct.pack(f"<7I I{len(words)}I", 0x31504F43, 0x00100001, config, ident,
                       5, 5, 5, header, *words)


# SET_IFM_REGION 1, SET_OFM_REGION 1, ELEMENTWISE (unary): reads and writes region 1.
IDENTITY_WORDS = [0x0001010F, 0x0001011F, 0x00050006, 0x00000000]
# The same from region 3 to region 4 (Vela's --separate-io-regions).
SEPARATE_IO_WORDS = [0x0003010F, 0x0004011F, 0x00050006, 0x00000000]


def cop2(words: list[int], config: int = 0x20000118, ident: int = 0x20007000,
         cache_size: int = 0) -> bytes:
    """A COP2 payload as Vela writes it: one COMMAND_STREAM entry whose VEUM metadata is
    padded so the command words start at byte 64."""
    metadata = struct.pack("<IHHIIIIQ", 0x4D554556, 1, 0, 20, config, ident, 2, cache_size)
    payload = struct.pack("<I", len(metadata) + 4) + metadata + bytes(4)
    payload += struct.pack(f"<{len(words)}I", *words)
    entry = struct.pack("<II", 1, len(payload)) + payload
    return struct.pack("<IHHQ", 0x32504F43, 1, 0, len(entry)) + entry


def make_artifact(tmp: Path, *, shape=(1, 8, 8, 16), dtype="int8", in_offset=0, out_offset=0,
                  scratch=1024, cmd: bytes | None = None, name: str = "model",
                  regions: tuple[int, int] = (1, 1)) -> Path:
    """Package a one-input, one-output model whose input and output share scratch.

    With equal offsets the output region *is* the input (inputs and outputs may alias in
    scratch, as Vela lays out some networks), so a run through a fake NPU returns the input.
    ``regions=(3, 4)`` places them in regions of their own (``--separate-io-regions``).
    """
    import numpy as np

    from pipeline.ethosu.package import package

    cmd = cmd if cmd is not None else cop1(IDENTITY_WORDS)
    vela_shape = [1] * (6 - len(shape)) + list(shape)
    elem = {"int8": 1, "uint8": 1, "int16": 2, "int32": 4}[dtype]
    npz = tmp / f"{name}_vela.npz"
    np.savez(npz, cmd_data=np.array(cmd, dtype=f"S{len(cmd)}"),
             weight_data=np.array(b"\x00", dtype="S1"),
             scratch_shape=np.array([scratch]), scratch_fast_shape=np.array([0]),
             input_shape=np.array([vela_shape]), input_elem_size=np.array([elem]),
             input_offset=np.array([in_offset]), input_region=np.array([regions[0]]),
             output_shape=np.array([vela_shape]), output_elem_size=np.array([elem]),
             output_offset=np.array([out_offset]), output_region=np.array([regions[1]]))
    io = tmp / f"{name}_io.json"
    entry = {"name": "x", "dtype": dtype, "shape": list(shape), "scale": 0.5, "zero_point": 0}
    io.write_text(json.dumps({"inputs": [entry], "outputs": [dict(entry, name="y")]}))
    return package(npz, io, tmp / f"{name}.bin")
