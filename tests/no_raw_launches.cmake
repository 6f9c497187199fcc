# ctest no_raw_launches: kernels/cuda (and the plugin examples' .cu files) launch only through
# launch<kernel>(...) (backends/cuda/compat.hpp, porta/gpu_plugin.hpp), never with <<<>>>, so
# that the SIMT emulator (gpu_emu) runs every kernel that nvcc and hipcc build; and kernels/cuda
# declares static shared arrays only through PORTA_SHARED (kernels/cuda/shared_memory.cuh), which
# the emulator refills per block, so a read of shared memory the block did not write shows.
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
file(GLOB porta_sources ${SOURCE_DIR}/kernels/cuda/*.cu ${SOURCE_DIR}/kernels/cuda/*.cuh)
set(plain_shared "")
foreach(src IN LISTS porta_sources)
  if(src MATCHES "shared_memory\\.cuh$")
    continue()
  endif()
  file(STRINGS ${src} lines REGEX "^[^/]*__shared__")
  if(lines)
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${src})
    list(APPEND plain_shared "${rel}: ${lines}")
  endif()
endforeach()
if(plain_shared)
  string(REPLACE ";" "\n  " plain_shared "${plain_shared}")
  message(FATAL_ERROR "plain __shared__ arrays (declare them with PORTA_SHARED(T, name, [extents]) from "
                      "kernels/cuda/shared_memory.cuh):\n  ${plain_shared}")
endif()
list(LENGTH sources count)
message(STATUS "no_raw_launches: ${count} kernels/cuda and examples sources launch through launch<>")
