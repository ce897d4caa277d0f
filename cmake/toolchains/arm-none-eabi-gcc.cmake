# Bare-metal Arm Cortex-M with Arm GNU Toolchain (arm-none-eabi-gcc + newlib).
#
# ETHOSU_RT_CPU (cortex-m0 .. cortex-m85) and ETHOSU_RT_ISA (scalar | dsp | mve; empty means
# the CPU's richest) become -mcpu/-march and the float ABI. GCC 12 has no -mcpu for
# cortex-m52 and cortex-m85, so those use the equivalent -march forms.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(ETHOSU_RT_CPU "cortex-m55" CACHE STRING "Cortex-M CPU (cortex-m0 .. cortex-m85)")
set(ETHOSU_RT_ISA "" CACHE STRING "ISA level: scalar, dsp or mve (empty: the CPU's richest)")
# try_compile() re-reads this file in a fresh project; pass the choice on.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ETHOSU_RT_CPU ETHOSU_RT_ISA)

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
# No OS to link a test program against: compiler checks build a static library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# <cpu>: <isa>=<flags> for every ISA the CPU has; the first entry is the default.
set(_cpu_cortex-m0 "scalar=-mcpu=cortex-m0 -mfloat-abi=soft")
set(_cpu_cortex-m0plus "scalar=-mcpu=cortex-m0plus -mfloat-abi=soft")
set(_cpu_cortex-m3 "scalar=-mcpu=cortex-m3 -mfloat-abi=soft")
set(_cpu_cortex-m4 "dsp=-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard")
set(_cpu_cortex-m7 "dsp=-mcpu=cortex-m7 -mfpu=fpv5-d16 -mfloat-abi=hard")
set(_cpu_cortex-m23 "scalar=-mcpu=cortex-m23 -mfloat-abi=soft")
set(_cpu_cortex-m33
    "dsp=-mcpu=cortex-m33 -mfpu=fpv5-sp-d16 -mfloat-abi=hard"
    "scalar=-mcpu=cortex-m33+nodsp -mfpu=fpv5-sp-d16 -mfloat-abi=hard")
set(_cpu_cortex-m35p
    "dsp=-mcpu=cortex-m35p -mfpu=fpv5-sp-d16 -mfloat-abi=hard"
    "scalar=-mcpu=cortex-m35p+nodsp -mfpu=fpv5-sp-d16 -mfloat-abi=hard")
set(_cpu_cortex-m52
    "mve=-march=armv8.1-m.main+mve.fp+fp.dp -mfloat-abi=hard"
    "dsp=-march=armv8.1-m.main+dsp+fp.dp -mfloat-abi=hard"
    "scalar=-march=armv8.1-m.main+fp.dp -mfloat-abi=hard")
set(_cpu_cortex-m55
    "mve=-mcpu=cortex-m55 -mfloat-abi=hard"
    "dsp=-mcpu=cortex-m55+nomve -mfloat-abi=hard"
    "scalar=-mcpu=cortex-m55+nodsp -mfloat-abi=hard")
set(_cpu_cortex-m85
    "mve=-march=armv8.1-m.main+mve.fp+fp.dp -mfloat-abi=hard"
    "dsp=-march=armv8.1-m.main+dsp+fp.dp -mfloat-abi=hard"
    "scalar=-march=armv8.1-m.main+fp.dp -mfloat-abi=hard")

if(NOT DEFINED _cpu_${ETHOSU_RT_CPU})
  message(FATAL_ERROR
    "ETHOSU_RT_CPU must be one of cortex-m0, cortex-m0plus, cortex-m3, cortex-m4, cortex-m7, "
    "cortex-m23, cortex-m33, cortex-m35p, cortex-m52, cortex-m55, cortex-m85; "
    "got '${ETHOSU_RT_CPU}'")
endif()
set(_isa_flags "")
set(_isa_names "")
foreach(_entry IN LISTS _cpu_${ETHOSU_RT_CPU})
  string(FIND "${_entry}" "=" _eq)
  string(SUBSTRING "${_entry}" 0 ${_eq} _name)
  math(EXPR _eq "${_eq} + 1")
  string(SUBSTRING "${_entry}" ${_eq} -1 _flags)
  list(APPEND _isa_names ${_name})
  if(_isa_flags STREQUAL "" AND (ETHOSU_RT_ISA STREQUAL "" OR ETHOSU_RT_ISA STREQUAL _name))
    set(_isa_flags "${_flags}")
  endif()
endforeach()
if(_isa_flags STREQUAL "")
  string(REPLACE ";" ", " _isa_names "${_isa_names}")
  message(FATAL_ERROR
    "ETHOSU_RT_ISA must be one of ${_isa_names} (or empty) for ${ETHOSU_RT_CPU}; "
    "got '${ETHOSU_RT_ISA}'")
endif()

set(CMAKE_C_FLAGS_INIT "-mthumb ${_isa_flags}")
set(CMAKE_CXX_FLAGS_INIT "-mthumb ${_isa_flags}")
set(CMAKE_ASM_FLAGS_INIT "-mthumb ${_isa_flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-mthumb ${_isa_flags}")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
