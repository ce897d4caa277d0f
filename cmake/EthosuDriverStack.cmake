# Arm's Ethos-U Linux driver stack for the Cortex-A backend over its driver library
# (-DETHOSU_RT_LINUX_DRIVER=ethosu-driver-stack; runtime/cortex_a/npu_driver_stack.cc).
#
# Where the stack comes from, in this order:
#   1. -DETHOSU_RT_DRIVER_STACK_DIR=<checkout of ethos-u-linux-driver-stack>;
#   2. otherwise tag ETHOSU_RT_DRIVER_STACK_TAG cloned from ETHOSU_RT_DRIVER_STACK_URL into the
#      build folder at configure time (needs the network; cloned once per build folder);
#   3. otherwise configure stops with one error naming both ways.
# As ExecuTorch does, only driver_library/src/ethosu.cpp is compiled (the library target
# `ethosu_driver_library`), with driver_library/include and kernel/include on its path.
set(ETHOSU_RT_LINUX_DRIVER "accel" CACHE STRING
    "Linux NPU driver: accel (mainline DRM accel ethosu) or ethosu-driver-stack (Arm's stack)")
set_property(CACHE ETHOSU_RT_LINUX_DRIVER PROPERTY STRINGS accel ethosu-driver-stack)
set(ETHOSU_RT_DRIVER_STACK_DIR "" CACHE PATH
    "Checkout of ethos-u-linux-driver-stack (empty: fetch ETHOSU_RT_DRIVER_STACK_TAG)")
set(ETHOSU_RT_DRIVER_STACK_TAG "26.05" CACHE STRING "Tag of the driver stack fetched without a checkout")
set(ETHOSU_RT_DRIVER_STACK_URL
    "https://git.gitlab.arm.com/artificial-intelligence/ethos-u/ethos-u-linux-driver-stack.git"
    CACHE STRING "Where the driver stack is fetched from")
set(ETHOSU_RT_DRIVER_STACK_FILES
    driver_library/include/ethosu.hpp driver_library/src/ethosu.cpp kernel/include/uapi/ethosu.h)

function(ethosu_rt_driver_stack_missing dir out_var)
  set(missing "")
  foreach(file IN LISTS ETHOSU_RT_DRIVER_STACK_FILES)
    if(NOT EXISTS "${dir}/${file}")
      list(APPEND missing "${file}")
    endif()
  endforeach()
  string(REPLACE ";" ", " missing "${missing}")
  set(${out_var} "${missing}" PARENT_SCOPE)
endfunction()

# Sets ETHOSU_RT_DRIVER_STACK_SOURCE (the checkout used) in the caller and defines
# ethosu_driver_library.
function(ethosu_rt_add_driver_stack)
  set(how "configure with -DETHOSU_RT_DRIVER_STACK_DIR=<checkout of ethos-u-linux-driver-stack> "
          "(targets.yaml: npu.driver_stack), or let CMake fetch tag "
          "${ETHOSU_RT_DRIVER_STACK_TAG} from ${ETHOSU_RT_DRIVER_STACK_URL}")
  string(REPLACE ";" "" how "${how}")
  if(ETHOSU_RT_DRIVER_STACK_DIR)
    set(dir "${ETHOSU_RT_DRIVER_STACK_DIR}")
    ethosu_rt_driver_stack_missing("${dir}" missing)
    if(missing)
      message(FATAL_ERROR
        "ETHOSU_RT_DRIVER_STACK_DIR must be a checkout of ethos-u-linux-driver-stack; got "
        "'${dir}', where ${missing} is missing")
    endif()
  else()
    set(dir "${CMAKE_BINARY_DIR}/_deps/ethos-u-linux-driver-stack-${ETHOSU_RT_DRIVER_STACK_TAG}")
    ethosu_rt_driver_stack_missing("${dir}" missing)
    if(missing)
      find_program(ETHOSU_RT_GIT git)
      set(result "git not found")
      if(ETHOSU_RT_GIT)
        file(REMOVE_RECURSE "${dir}")
        execute_process(
          COMMAND "${ETHOSU_RT_GIT}" clone --quiet --depth 1 --branch
                  "${ETHOSU_RT_DRIVER_STACK_TAG}" "${ETHOSU_RT_DRIVER_STACK_URL}" "${dir}"
          RESULT_VARIABLE status ERROR_VARIABLE error TIMEOUT 300)
        string(STRIP "${error}" error)
        string(REGEX REPLACE "\n" " " error "${error}")
        set(result "exit status ${status}: ${error}")
      endif()
      ethosu_rt_driver_stack_missing("${dir}" missing)
      if(missing)
        message(FATAL_ERROR
          "ETHOSU_RT_LINUX_DRIVER=ethosu-driver-stack needs Arm's Ethos-U Linux driver stack: "
          "${how}. No checkout was given and the fetch failed (${result})")
      endif()
    endif()
  endif()
  add_library(ethosu_driver_library STATIC "${dir}/driver_library/src/ethosu.cpp")
  # SYSTEM: the stack's headers are not held to this runtime's warning flags.
  target_include_directories(ethosu_driver_library SYSTEM PUBLIC
    "${dir}/driver_library/include" "${dir}/kernel/include")
  set(ETHOSU_RT_DRIVER_STACK_SOURCE "${dir}" PARENT_SCOPE)
endfunction()
