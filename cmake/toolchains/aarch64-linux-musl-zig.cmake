# AArch64 Linux, static musl, with zig's bundled clang/musl/libc++ (PyPI `ziglang`).
# The compilers are the wrapper scripts in zig/, which run
# `python -m ziglang cc|c++ -target aarch64-linux-musl`; they find the Python that has
# ziglang from $ETHOSU_RT_ZIG_PYTHON, else the repository's .venv, else python3.
#
# ETHOSU_RT_CPU (optional, e.g. cortex-a55) becomes zig's -mcpu spelling (cortex_a55).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(ETHOSU_RT_CPU "" CACHE STRING "Cortex-A CPU for -mcpu (empty: generic)")
set(ETHOSU_RT_ISA "" CACHE STRING "Unused for Cortex-A; must stay empty")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ETHOSU_RT_CPU ETHOSU_RT_ISA)
if(NOT ETHOSU_RT_ISA STREQUAL "")
  message(FATAL_ERROR "ETHOSU_RT_ISA must be empty for aarch64-linux-musl (ISA levels are a "
                      "Cortex-M setting); got '${ETHOSU_RT_ISA}'")
endif()

set(CMAKE_C_COMPILER "${CMAKE_CURRENT_LIST_DIR}/zig/zig-cc")
set(CMAKE_CXX_COMPILER "${CMAKE_CURRENT_LIST_DIR}/zig/zig-c++")
set(CMAKE_AR "${CMAKE_CURRENT_LIST_DIR}/zig/zig-ar" CACHE FILEPATH "zig's llvm-ar")
set(CMAKE_RANLIB "${CMAKE_CURRENT_LIST_DIR}/zig/zig-ranlib" CACHE FILEPATH "zig's llvm-ranlib")

set(_cpu_flags "")
if(NOT ETHOSU_RT_CPU STREQUAL "")
  string(REPLACE "-" "_" _zig_cpu "${ETHOSU_RT_CPU}")
  set(_cpu_flags "-mcpu=${_zig_cpu}")
endif()
set(CMAKE_C_FLAGS_INIT "${_cpu_flags}")
set(CMAKE_CXX_FLAGS_INIT "${_cpu_flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
