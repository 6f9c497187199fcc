# Can the hip backend be built here? Sets PORTA_hip_MISSING to "" (yes) or the reason.
# Needs hipcc (Debian: hipcc) and the HIP runtime (Debian: libamdhip64-dev). CMake's own HIP
# language does not find Debian's packages, so backend_hip.cmake drives hipcc directly.
find_program(PORTA_HIPCC hipcc)
find_library(PORTA_AMDHIP64 amdhip64)
find_path(PORTA_HIP_INCLUDE hip/hip_runtime.h)
set(PORTA_hip_MISSING "")
if(NOT PORTA_HIPCC)
  set(PORTA_hip_MISSING "no hipcc found (Debian: apt-get install hipcc)")
elseif(NOT PORTA_AMDHIP64 OR NOT PORTA_HIP_INCLUDE)
  set(PORTA_hip_MISSING "hipcc found but not the HIP runtime (Debian: apt-get install libamdhip64-dev)")
endif()
