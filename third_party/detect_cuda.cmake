# Can the cuda backend be built here? Sets PORTA_cuda_MISSING to "" (yes) or the reason.
# Needs nvcc (CMake's CUDA language) and the CUDA toolkit's runtime library; a GPU or driver
# is NOT needed to build: without one the backend loads and reports the runtime's reason.
include(CheckLanguage)
check_language(CUDA)
set(PORTA_cuda_MISSING "")
if(NOT CMAKE_CUDA_COMPILER)
  set(PORTA_cuda_MISSING "no CUDA compiler (nvcc) found: put /usr/local/cuda/bin on PATH or set CMAKE_CUDA_COMPILER")
else()
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND)
    set(PORTA_cuda_MISSING "nvcc found at ${CMAKE_CUDA_COMPILER} but not the CUDA toolkit libraries (cudart)")
  endif()
endif()
