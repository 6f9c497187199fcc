# The hip backend: the same backends/cuda + kernels/cuda sources compiled by hipcc as HIP
# (-DPORTA_HIP=1 selects HIP names in backends/cuda/compat.hpp) into objects linked into
# libporta. CMake's HIP language cannot be used with Debian's packages (TOOLCHAINS.md).
set(PORTA_HIP_ARCHS "gfx90a;gfx940;gfx1030" CACHE STRING "AMD GPU targets for the hip backend")
include(${CMAKE_SOURCE_DIR}/third_party/gpu_sources.cmake)

set(_porta_hip_flags -x hip -std=c++20 -fPIC -O3 -DNDEBUG -DPORTA_HIP=1
  -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR} -Wall -Wno-unused-parameter)
foreach(arch IN LISTS PORTA_HIP_ARCHS)
  list(APPEND _porta_hip_flags --offload-arch=${arch})
endforeach()
set(_porta_hip_launcher "")
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(_porta_hip_launcher ${CMAKE_CXX_COMPILER_LAUNCHER})
endif()

set(PORTA_HIP_OBJECTS "")
foreach(src IN LISTS PORTA_GPU_SOURCES)
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${src})
  set(obj ${CMAKE_BINARY_DIR}/hip_objects/${rel}.o)
  get_filename_component(dir ${obj} DIRECTORY)
  file(MAKE_DIRECTORY ${dir})
  add_custom_command(OUTPUT ${obj}
    COMMAND ${_porta_hip_launcher} ${PORTA_HIPCC} ${_porta_hip_flags} -MD -MF ${obj}.d -c ${src} -o ${obj}
    DEPENDS ${src}
    DEPFILE ${obj}.d
    COMMENT "Building HIP object ${rel}.o"
    VERBATIM)
  list(APPEND PORTA_HIP_OBJECTS ${obj})
endforeach()
set_source_files_properties(${PORTA_HIP_OBJECTS} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
target_sources(porta PRIVATE ${PORTA_HIP_OBJECTS})
target_link_libraries(porta PRIVATE ${PORTA_AMDHIP64})
message(STATUS "porta hip: targets ${PORTA_HIP_ARCHS} with ${PORTA_HIPCC}")
