# Exactly one runtime platform per build directory, checked against the toolchain.
set(ETHOSU_RT_PLATFORMS cortex_m cortex_a host)
set(ETHOSU_RT_PLATFORM "" CACHE STRING "Runtime platform: exactly one of cortex_m, cortex_a, host")
set_property(CACHE ETHOSU_RT_PLATFORM PROPERTY STRINGS ${ETHOSU_RT_PLATFORMS})

function(ethosu_rt_check_platform)
  string(REPLACE "," ";" requested "${ETHOSU_RT_PLATFORM}")
  list(REMOVE_ITEM requested "")
  list(LENGTH requested count)
  if(count EQUAL 0)
    message(FATAL_ERROR
      "ETHOSU_RT_PLATFORM must be one of cortex_m, cortex_a, host; got nothing. "
      "Configure with -DETHOSU_RT_PLATFORM=<platform>.")
  elseif(count GREATER 1)
    message(FATAL_ERROR
      "ETHOSU_RT_PLATFORM must name exactly one platform (cortex_m, cortex_a or host); "
      "got ${count}: '${ETHOSU_RT_PLATFORM}'. Configure each platform in its own build directory.")
  endif()
  if(NOT ETHOSU_RT_PLATFORM IN_LIST ETHOSU_RT_PLATFORMS)
    message(FATAL_ERROR
      "ETHOSU_RT_PLATFORM must be one of cortex_m, cortex_a, host; got '${ETHOSU_RT_PLATFORM}'")
  endif()
  if(ETHOSU_RT_PLATFORM STREQUAL "cortex_m" AND NOT CMAKE_SYSTEM_NAME STREQUAL "Generic")
    message(FATAL_ERROR
      "ETHOSU_RT_PLATFORM=cortex_m must be built with a bare-metal toolchain "
      "(cmake/toolchains/arm-none-eabi-gcc.cmake); got CMAKE_SYSTEM_NAME '${CMAKE_SYSTEM_NAME}'")
  endif()
  if(ETHOSU_RT_PLATFORM STREQUAL "cortex_a" AND NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
    message(FATAL_ERROR
      "ETHOSU_RT_PLATFORM=cortex_a must be built with a Linux toolchain "
      "(cmake/toolchains/aarch64-linux-gnu-gcc.cmake or aarch64-linux-musl-zig.cmake); "
      "got CMAKE_SYSTEM_NAME '${CMAKE_SYSTEM_NAME}'")
  endif()
  if(ETHOSU_RT_PLATFORM STREQUAL "host" AND CMAKE_CROSSCOMPILING)
    message(FATAL_ERROR
      "ETHOSU_RT_PLATFORM=host must be built with cmake/toolchains/host.cmake; "
      "got a cross toolchain for '${CMAKE_SYSTEM_NAME}/${CMAKE_SYSTEM_PROCESSOR}'")
  endif()
endfunction()
