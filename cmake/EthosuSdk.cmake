# Locating Arm's Ethos-U core driver inside the SDK a target names (-DETHOSU_SDK=<path>).
#
# Accepted layouts: the core driver itself, an SDK with core_driver/, an Ethos-U checkout
# with core_software/core_driver/, or one with ethos-u-core-driver/. The driver's own
# CMake project defines the `ethosu_core_driver` library; its NPU variant comes from
# ETHOSU_RT_NPU_CONFIG (passed on as ETHOSU_TARGET_NPU_CONFIG).
set(ETHOSU_RT_NPU_CONFIG "ethos-u55-128" CACHE STRING
    "NPU variant the core driver is built for (ETHOSU_TARGET_NPU_CONFIG)")

function(ethosu_rt_find_core_driver sdk out_var)
  set(candidates "${sdk}" "${sdk}/core_driver" "${sdk}/core_software/core_driver"
                 "${sdk}/ethos-u-core-driver")
  foreach(dir IN LISTS candidates)
    if(EXISTS "${dir}/include/ethosu_driver.h" AND EXISTS "${dir}/CMakeLists.txt")
      set(${out_var} "${dir}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  list(TRANSFORM candidates APPEND "/include/ethosu_driver.h")
  string(REPLACE ";" ", " searched "${candidates}")
  message(FATAL_ERROR
    "ETHOSU_SDK must point to an Ethos-U SDK or core driver checkout; got '${sdk}', where none "
    "of these exists (with a CMakeLists.txt beside include/): ${searched}")
endfunction()

function(ethosu_rt_add_core_driver sdk)
  ethosu_rt_find_core_driver("${sdk}" driver_dir)
  set(ETHOSU_TARGET_NPU_CONFIG "${ETHOSU_RT_NPU_CONFIG}" CACHE STRING "" FORCE)
  add_subdirectory("${driver_dir}" "${CMAKE_BINARY_DIR}/ethosu_core_driver" EXCLUDE_FROM_ALL)
  if(NOT TARGET ethosu_core_driver)
    message(FATAL_ERROR
      "ETHOSU_SDK: '${driver_dir}' must define the CMake target ethosu_core_driver; it does not")
  endif()
  set(ETHOSU_RT_CORE_DRIVER_DIR "${driver_dir}" PARENT_SCOPE)
endfunction()
