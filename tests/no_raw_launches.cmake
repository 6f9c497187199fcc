# ctest no_raw_launches: kernels/cuda (and the plugin examples' .cu files) launch only through
# launch<kernel>(...) (backends/cuda/compat.hpp, porta/gpu_plugin.hpp), never with <<<>>>, so
# that the SIMT emulator (gpu_emu) runs every kernel that nvcc and hipcc build.
# Run as: cmake -DSOURCE_DIR=<repo> -P no_raw_launches.cmake
file(GLOB sources ${SOURCE_DIR}/kernels/cuda/*.cu ${SOURCE_DIR}/kernels/cuda/*.cuh ${SOURCE_DIR}/examples/*/*.cu)
set(offenders "")
foreach(src IN LISTS sources)
  file(STRINGS ${src} lines REGEX "<<<")
  if(lines)
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${src})
    list(APPEND offenders "${rel}: ${lines}")
  endif()
endforeach()
if(offenders)
  string(REPLACE ";" "\n  " offenders "${offenders}")
  message(FATAL_ERROR "raw <<<>>> launches (use launch<kernel>(grid, block, shared_bytes, stream, args...)):\n  ${offenders}")
endif()
list(LENGTH sources count)
message(STATUS "no_raw_launches: ${count} kernels/cuda and examples sources launch through launch<>")
