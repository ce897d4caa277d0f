# AArch64 Linux with Debian's cross GCC (aarch64-linux-gnu-g++ 12, glibc); executables are
# linked -static so they run on any image (and under qemu-aarch64) without a sysroot.
#
# ETHOSU_RT_CPU (optional, e.g. cortex-a55) becomes -mcpu; GCC 12 knows neither
# -mcpu=cortex-a320 nor -march=armv9.2-a, so the Cortex-A320 gets -march=armv9-a.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(ETHOSU_RT_CPU "" CACHE STRING "Cortex-A CPU for -mcpu (empty: generic armv8-a)")
set(ETHOSU_RT_ISA "" CACHE STRING "Unused for Cortex-A; must stay empty")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ETHOSU_RT_CPU ETHOSU_RT_ISA)
if(NOT ETHOSU_RT_ISA STREQUAL "")
  message(FATAL_ERROR "ETHOSU_RT_ISA must be empty for aarch64-linux-gnu (ISA levels are a "
                      "Cortex-M setting); got '${ETHOSU_RT_ISA}'")
endif()

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(_cpu_flags "")
if(ETHOSU_RT_CPU STREQUAL "cortex-a320")
  set(_cpu_flags "-march=armv9-a")
elseif(NOT ETHOSU_RT_CPU STREQUAL "")
  set(_cpu_flags "-mcpu=${ETHOSU_RT_CPU}")
endif()
set(CMAKE_C_FLAGS_INIT "${_cpu_flags}")
set(CMAKE_CXX_FLAGS_INIT "${_cpu_flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")

set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
