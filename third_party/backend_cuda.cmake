# The cuda backend: backends/cuda + kernels/cuda compiled by nvcc into libporta.
# CMAKE_CUDA_ARCHITECTURES defaults to sm_80 (+ compute_80 PTX, which newer GPUs JIT) and
# sm_90; scripts/gpu-check.sh narrows it to the GPU present.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES 80 90-real)
endif()
if(CMAKE_CXX_COMPILER_LAUNCHER AND NOT CMAKE_CUDA_COMPILER_LAUNCHER)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
include(${CMAKE_SOURCE_DIR}/third_party/gpu_sources.cmake)

# CMake 3.25 does not know nvcc 13's C++20 flag; teach it rather than fight the default.
set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_EXTENSIONS OFF)
# An object library of its own: porta's C++ warning flags are not nvcc flags.
add_library(porta_cuda_objects OBJECT ${PORTA_GPU_SOURCES})
target_include_directories(porta_cuda_objects PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR})
# Directory-wide options (the sanitizer builds' -fsanitize=...) are host compiler flags that
# nvcc itself rejects: hand them to the host compiler instead.
get_target_property(_porta_dir_opts porta_cuda_objects COMPILE_OPTIONS)
set_property(TARGET porta_cuda_objects PROPERTY COMPILE_OPTIONS "")
if(_porta_dir_opts)
  foreach(opt IN LISTS _porta_dir_opts)
    # nvcc splits -Xcompiler values at commas: -fsanitize=a,b becomes -fsanitize=a -fsanitize=b.
    if(opt MATCHES "^(-f[a-z-]+=)(.*,.*)$")
      set(_prefix "${CMAKE_MATCH_1}")
      string(REPLACE "," ";" _values "${CMAKE_MATCH_2}")
      foreach(v IN LISTS _values)
        target_compile_options(porta_cuda_objects PRIVATE "-Xcompiler=${_prefix}${v}")
      endforeach()
    else()
      target_compile_options(porta_cuda_objects PRIVATE "-Xcompiler=${opt}")
    endif()
  endforeach()
endif()
target_compile_options(porta_cuda_objects PRIVATE --expt-relaxed-constexpr -Xcompiler=-Wall
  -Xcompiler=-Wno-unused-parameter)
set_target_properties(porta_cuda_objects PROPERTIES POSITION_INDEPENDENT_CODE ON
  CUDA_RUNTIME_LIBRARY Shared)
target_sources(porta PRIVATE $<TARGET_OBJECTS:porta_cuda_objects>)
# porta links as C++; the CUDA objects bring the toolkit's implicit libraries along, which
# live in the toolkit's library directory.
set_target_properties(porta PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
target_link_directories(porta PRIVATE ${CUDAToolkit_LIBRARY_DIR})
target_link_libraries(porta PRIVATE CUDA::cudart CUDA::cublas)

# cuDNN for Conv when present (PORTA_CUDNN: AUTO, ON = required, OFF). Looked for in the
# toolkit, in PORTA_CUDNN_ROOT (e.g. a pip nvidia-cudnn-cu13 package: its include/ and lib/)
# and on the default paths; without it Conv runs porta's implicit-GEMM kernel.
set(PORTA_CUDNN "AUTO" CACHE STRING "Use cuDNN for Conv on cuda: AUTO, ON or OFF")
set(PORTA_CUDNN_ROOT "" CACHE PATH "Folder holding cuDNN's include/ and lib/ (optional)")
set(_porta_cudnn_status "not used (PORTA_CUDNN=OFF)")
if(NOT PORTA_CUDNN STREQUAL "OFF")
  find_path(PORTA_CUDNN_INCLUDE cudnn.h HINTS ${PORTA_CUDNN_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS})
  find_library(PORTA_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
    HINTS ${PORTA_CUDNN_ROOT}/lib ${PORTA_CUDNN_ROOT}/lib64 ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib)
  if(PORTA_CUDNN_INCLUDE AND PORTA_CUDNN_LIBRARY)
    # Only the one file that calls cuDNN sees it: toggling cuDNN rebuilds nothing else.
    set_source_files_properties(${CMAKE_SOURCE_DIR}/kernels/cuda/conv_cudnn.cu TARGET_DIRECTORY porta_cuda_objects
      PROPERTIES COMPILE_DEFINITIONS PORTA_HAVE_CUDNN=1 INCLUDE_DIRECTORIES ${PORTA_CUDNN_INCLUDE})
    target_link_libraries(porta PRIVATE ${PORTA_CUDNN_LIBRARY})
    set(_porta_cudnn_status "${PORTA_CUDNN_LIBRARY}")
  elseif(PORTA_CUDNN STREQUAL "ON")
    message(FATAL_ERROR "PORTA_CUDNN=ON but cudnn.h / libcudnn were not found (set PORTA_CUDNN_ROOT)")
  else()
    set(_porta_cudnn_status "not found (Conv uses porta's implicit-GEMM kernel)")
  endif()
endif()
message(STATUS "porta cuda: architectures ${CMAKE_CUDA_ARCHITECTURES}, toolkit ${CUDAToolkit_VERSION}, cuDNN ${_porta_cudnn_status}")
