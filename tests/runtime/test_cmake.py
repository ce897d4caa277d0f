import hashlib
import os
import re
import subprocess
import sys

import pytest

from pipeline.errors import StageError
from pipeline.runtime import cmake as runtime_build
from pipeline.runtime.cmake import REPO_ROOT, build_runtime, toolchain_fingerprint


class Recorder:
    """Stands in for subprocess.run: records argv lists, fails when told to."""

    def __init__(self, fail_on: str | None = None, stderr: str = ""):
        self.calls, self.envs, self.fail_on, self.stderr = [], [], fail_on, stderr

    def __call__(self, argv, **kwargs):
        assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)
        assert "shell" not in kwargs
        self.calls.append(argv)
        self.envs.append(kwargs.get("env"))
        code = 1 if self.fail_on and self.fail_on in argv else 0
        return subprocess.CompletedProcess(argv, code, "", self.stderr)


def _build(tmp_path, **overrides):
    options = dict(toolchain="arm-none-eabi-gcc", cpu="cortex-m55", isa="mve",
                   platform="cortex_m", build_type="Release")
    options.update(overrides)
    return build_runtime(REPO_ROOT, tmp_path / "build", **options)


def test_configure_and_build_argv(tmp_path, monkeypatch):
    recorder = Recorder()
    monkeypatch.setattr(runtime_build.subprocess, "run", recorder)
    monkeypatch.setenv("CXXFLAGS", "-g")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "ethosu_rt_outputs.txt").write_text(f"{tmp_path / 'lib.a'}\n")
    (tmp_path / "lib.a").write_bytes(b"!<arch>\n")
    outputs = _build(tmp_path, platform="baremetal", ethosu_sdk=tmp_path / "sdk",
                     model_c=tmp_path / "m.c")
    assert outputs == [tmp_path / "lib.a"]
    configure, build = recorder.calls
    assert configure[:9] == ["cmake", "--fresh", "-G", "Ninja", "-S", str(REPO_ROOT / "runtime"),
                             "-B", str(tmp_path / "build"),
                             f"-DCMAKE_TOOLCHAIN_FILE={REPO_ROOT}/cmake/toolchains/"
                             "arm-none-eabi-gcc.cmake"]
    for flag in ("-DETHOSU_RT_PLATFORM=cortex_m", "-DCMAKE_BUILD_TYPE=Release",
                 "-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache",
                 "-DETHOSU_RT_CPU=cortex-m55", "-DETHOSU_RT_ISA=mve",
                 f"-DETHOSU_SDK={tmp_path / 'sdk'}", f"-DETHOSU_RT_MODEL_C={tmp_path / 'm.c'}"):
        assert flag in configure
    assert build == ["cmake", "--build", str(tmp_path / "build")]
    assert all("CXXFLAGS" not in env and env["PATH"] for env in recorder.envs)


def test_build_environment_drops_what_changes_the_binaries():
    given = {"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "TMPDIR": "/t",
             "CCACHE_DIR": "/c", "CCACHE_BASEDIR": "/w", "CC": "clang", "CXX": "false",
             "CFLAGS": "-g", "CXXFLAGS": "-g", "CPPFLAGS": "-DX", "LDFLAGS": "-s",
             "ASM": "as", "ASMFLAGS": "-g", "ASM_NASM": "nasm", "CMAKE_TOOLCHAIN_FILE": "t",
             "CMAKE_GENERATOR": "Unix Makefiles", "CMAKE_BUILD_TYPE": "Debug",
             "CMAKE_C_FLAGS": "-O0", "CMAKE_PREFIX_PATH": "/opt", "CPATH": "/i",
             "C_INCLUDE_PATH": "/i", "CPLUS_INCLUDE_PATH": "/i", "LIBRARY_PATH": "/l",
             "GCC_EXEC_PREFIX": "/g", "COMPILER_PATH": "/g", "SOURCE_DATE_EPOCH": "0",
             "ZIG_LIB_DIR": "/z", "CCC_OVERRIDE_OPTIONS": "+-g"}
    kept = {"PATH", "HOME", "LANG", "TMPDIR", "CCACHE_DIR", "CCACHE_BASEDIR"}
    env = runtime_build.build_environment("arm-none-eabi-gcc", given)
    assert env == {name: given[name] for name in kept}
    zig = runtime_build.build_environment("aarch64-linux-musl-zig", given)
    assert zig == {**env, "ETHOSU_RT_ZIG_PYTHON": sys.executable}


@pytest.mark.parametrize("field, value, allowed", [
    ("toolchain", "clang",
     "arm-none-eabi-gcc, aarch64-linux-gnu-gcc, aarch64-linux-musl-zig, host"),
    ("platform", "rtos", "cortex_m, cortex_a, host, baremetal, linux"),
    ("build_type", "Fast", "Release, Debug, RelWithDebInfo, MinSizeRel"),
])
def test_options_name_the_allowed_values(tmp_path, field, value, allowed):
    with pytest.raises(StageError, match=re.escape(
            f"runtime_build: {field} must be one of {allowed}; got {value!r}")):
        _build(tmp_path, **{field: value})


def test_a_failed_configure_names_the_command_and_cmake_message(tmp_path, monkeypatch):
    recorder = Recorder(fail_on="-G", stderr="CMake Error: ETHOSU_RT_PLATFORM must be one of")
    monkeypatch.setattr(runtime_build.subprocess, "run", recorder)
    with pytest.raises(StageError) as info:
        _build(tmp_path)
    message = str(info.value)
    assert message.startswith(
        "runtime_build: CMake configure of the runtime failed (exit status 1)")
    assert "command: cmake --fresh -G Ninja -S" in message
    assert "CMake Error: ETHOSU_RT_PLATFORM must be one of" in message
    assert len(recorder.calls) == 1


@pytest.mark.needs_cmake
def test_real_host_build_returns_libraries_and_runner(tmp_path):
    outputs = build_runtime(REPO_ROOT, tmp_path / "b", toolchain="host", cpu="host", isa=None,
                            platform="host", build_type="Release")
    assert sorted(p.name for p in outputs) == ["ethosu_runner", "libethosu_rt_common.a",
                                               "libethosu_rt_cortex_a.a"]
    assert all(p.is_file() and p.is_absolute() for p in outputs)


@pytest.mark.needs_cmake
def test_real_configure_error_reaches_the_user(tmp_path):
    with pytest.raises(StageError, match="ETHOSU_RT_PLATFORM=cortex_m must be built with a "
                                         "bare-metal toolchain"):
        build_runtime(REPO_ROOT, tmp_path / "b", toolchain="host", cpu="host", isa=None,
                      platform="cortex_m", build_type="Release")


def test_fingerprint_is_stable_and_follows_the_toolchain_files(tmp_path, monkeypatch):
    toolchain_fingerprint.cache_clear()
    first = toolchain_fingerprint("host")
    assert first == toolchain_fingerprint("host")
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    assert first != toolchain_fingerprint("arm-none-eabi-gcc")
    copy = tmp_path / "cmake" / "toolchains"
    copy.mkdir(parents=True)
    for path in runtime_build.TOOLCHAIN_DIR.glob("*.cmake"):
        (copy / path.name).write_text(path.read_text())
    monkeypatch.setattr(runtime_build, "TOOLCHAIN_DIR", copy)
    toolchain_fingerprint.cache_clear()
    same_files = toolchain_fingerprint("host")
    (copy / "host.cmake").write_text("# changed\n")
    toolchain_fingerprint.cache_clear()
    assert toolchain_fingerprint("host") != same_files
    toolchain_fingerprint.cache_clear()


def test_fingerprint_of_an_unknown_toolchain():
    with pytest.raises(StageError, match="toolchain must be one of .*; got 'msvc'"):
        toolchain_fingerprint("msvc")


# What a user's shell may hold; each of these would change the binaries (or the compiler).
POLLUTED = {"CFLAGS": "-g", "CXXFLAGS": "-g -O0", "LDFLAGS": "-Wl,--build-id=sha1",
            "CC": "false", "CXX": "false", "CMAKE_BUILD_TYPE": "Debug",
            "CMAKE_GENERATOR": "Unix Makefiles", "CPATH": "/nonexistent", "SOURCE_DATE_EPOCH": "1"}


@pytest.mark.slow
@pytest.mark.needs_aarch64_gcc
def test_environment_flags_change_no_byte_of_the_runtime(tmp_path, monkeypatch):
    """The Linux runtime (runner and both libraries) built with CFLAGS=-g, CC=false and
    friends in the environment, and in a folder an older version configured with them (CMake
    keeps what a first configure saw), is byte for byte the one built without them."""
    options = dict(toolchain="aarch64-linux-gnu-gcc", cpu="cortex-a320", isa=None,
                   platform="linux", build_type="Release")
    clean = build_runtime(REPO_ROOT, tmp_path / "clean", **options)
    stale = tmp_path / "stale"
    toolchain_file = runtime_build.TOOLCHAIN_DIR / "aarch64-linux-gnu-gcc.cmake"
    subprocess.run(["cmake", "-G", "Ninja", "-S", str(REPO_ROOT / "runtime"), "-B", str(stale),
                    f"-DCMAKE_TOOLCHAIN_FILE={toolchain_file}",
                    "-DETHOSU_RT_PLATFORM=cortex_a"], env={**os.environ, **POLLUTED},
                   check=True, capture_output=True)
    restale = build_runtime(REPO_ROOT, stale, **options)
    for name, value in POLLUTED.items():
        monkeypatch.setenv(name, value)
    polluted = build_runtime(REPO_ROOT, tmp_path / "polluted", **options)
    assert sorted(p.name for p in clean) == ["ethosu_runner", "libethosu_rt_common.a",
                                             "libethosu_rt_cortex_a.a"]
    for built in (polluted, restale):
        assert _digests(built) == _digests(clean)


def _digests(paths) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}
