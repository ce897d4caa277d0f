# Compiler settings applied per target (never directory-wide).
option(ETHOSU_RT_WERROR "Treat warnings in the runtime's own targets as errors" ON)

function(ethosu_rt_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wshadow -Wundef -Wcast-qual -Wmissing-declarations
    $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor -Wold-style-cast>
    $<$<BOOL:${ETHOSU_RT_WERROR}>:-Werror>)
endfunction()

# Code that must run without a heap, exceptions or RTTI (common/, cortex_m/). On bare
# metal it is optimised for size in every build type: flash is the scarce resource, the
# code parses an artifact once and moves tensors with memcpy, so -O3 buys nothing. Two
# -Os refinements, measured on the Cortex-M55 (about 100 bytes each way): sibling calls
# repeat a whole epilogue before every tail branch, and the second scheduling pass
# stretches register lifetimes; neither pays for itself in code that runs once per model.
function(ethosu_rt_embedded target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti -fno-threadsafe-statics>
    -ffunction-sections -fdata-sections)
  if(CMAKE_SYSTEM_NAME STREQUAL "Generic")
    target_compile_options(${target} PRIVATE -Os -fno-optimize-sibling-calls
                                             -fno-schedule-insns2)
  endif()
endfunction()

# Records a product file for ethosu_rt_outputs.txt (read by pipeline/runtime/cmake.py).
function(ethosu_rt_output target)
  set_property(GLOBAL APPEND PROPERTY ETHOSU_RT_OUTPUTS "$<TARGET_FILE:${target}>")
endfunction()
