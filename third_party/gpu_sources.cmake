# The one list of GPU sources: built by nvcc for the cuda backend and by hipcc for the hip
# backend (see backends/cuda/compat.hpp).
file(GLOB PORTA_GPU_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/backends/cuda/*.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/*.cu)
