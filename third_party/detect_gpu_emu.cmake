# The gpu_emu backend needs only the host C++ compiler: its fibers switch stacks with code of
# their own on x86-64 and with ucontext elsewhere (glibc).
set(PORTA_gpu_emu_MISSING "")
if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
  set(PORTA_gpu_emu_MISSING "the SIMT emulator's fibers are written for Linux")
elseif(PORTA_TSAN)
  set(PORTA_gpu_emu_MISSING "ThreadSanitizer is not told about the emulator's fiber switches")
endif()
