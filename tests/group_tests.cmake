# Registers porta_tests with ctest in groups (one ctest entry per op x device for the
# conformance suite, per op family for ONNX's node cases, per suite otherwise), so ctest
# stays fast while failures still point at an op and a device. Runs when ctest starts
# (TEST_INCLUDE_FILES), reading the test list from the executable itself.
# A group whose tests were all skipped is reported by ctest as skipped.
#
# With GPU_EMU_LOG_DIR set (builds with the SIMT emulator), the groups that run on gpu_emu
# write the kernels they launch to GPU_EMU_LOG_DIR/<group>.log, and gpu_emu.kernel_coverage,
# after them, fails unless every __global__ kernel of kernels/cuda was launched at warp 32 and
# 64 (scripts/gpu-emu-coverage.sh --logs). gpu_emu.kernel_log_reset empties the folder first.
# GPU_EMU_ONLY (a regex; the sanitizer build's subset) drops every other gpu_emu group and
# the coverage check.
execute_process(COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
  OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  file(WRITE "${CTEST_FILE}" "add_test(porta_tests_list_failed \"${TEST_EXECUTABLE}\" --gtest_list_tests)\n")
  return()
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(suite "")
set(groups "")
foreach(line IN LISTS lines)
  if(line MATCHES "^Running main")
    continue()
  elseif(line MATCHES "^([^ ].*)\\.$")
    set(suite "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^  ([^ ]+)")
    set(test "${CMAKE_MATCH_1}")
    if(suite STREQUAL "Zoo" OR suite STREQUAL "ZooPrecision")  # entries per member, from tests/CMakeLists.txt
      continue()
    endif()
    if(suite STREQUAL "Ops/Conformance" AND test MATCHES "^[^/]+/([A-Za-z0-9]+)_.*_(cpu|vulkan_[0-9]+|cuda_[0-9]+|hip_[0-9]+|gpu_emu_[0-9]+)$")
      set(name "conformance.${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
      set(filter "Ops/Conformance.*/${CMAKE_MATCH_1}_*_${CMAKE_MATCH_2}")
    elseif(suite STREQUAL "OnnxNode" AND test MATCHES "^test_([a-z0-9]+)")
      set(name "onnx_node.${CMAKE_MATCH_1}")
      set(filter "OnnxNode.test_${CMAKE_MATCH_1}_*:OnnxNode.test_${CMAKE_MATCH_1}")
    else()
      string(REPLACE "/" "." name "${suite}")
      set(filter "${suite}.*")
    endif()
    if(GPU_EMU_ONLY AND name MATCHES "gpu_emu|GpuEmu" AND NOT name MATCHES "${GPU_EMU_ONLY}")
      continue()
    endif()
    if(NOT DEFINED "filter_${name}")
      set("filter_${name}" "${filter}")
      list(APPEND groups "${name}")
    endif()
  endif()
endforeach()
set(env_property "")
if(TEST_ENVIRONMENT)
  set(env_property "ENVIRONMENT [=[${TEST_ENVIRONMENT}]=]")
endif()
set(content "")
set(emu_groups "")
foreach(g IN LISTS groups)
  set(props "${env_property}")
  if(GPU_EMU_LOG_DIR AND g MATCHES "gpu_emu_[0-9]+$|^Warps\\.GpuEmu$|^Backends\\.Gpu")
    list(APPEND emu_groups "${g}")
    set(env ${TEST_ENVIRONMENT} "PORTA_GPU_EMU_KERNEL_LOG=${GPU_EMU_LOG_DIR}/${g}.log")
    set(props "ENVIRONMENT [=[${env}]=] FIXTURES_REQUIRED gpu_emu_kernel_log")
  endif()
  string(APPEND content "add_test([=[${g}]=] \"${TEST_EXECUTABLE}\" [=[--gtest_filter=${filter_${g}}]=] --gtest_brief=1)\n")
  # Skipped: nothing ran, or nothing passed and something was skipped. A group whose only test
  # failed also reads "[  PASSED  ] 0 tests", so that line alone must not mean skipped.
  string(APPEND content "set_tests_properties([=[${g}]=] PROPERTIES TIMEOUT 900 SKIP_REGULAR_EXPRESSION [=[\\[==========\\] 0 tests from|\\[  PASSED  \\] 0 tests\\.\n\\[  SKIPPED \\]]=] ${props})\n")
endforeach()
if(GPU_EMU_LOG_DIR AND emu_groups)
  string(APPEND content "add_test(gpu_emu.kernel_log_reset bash [=[${SOURCE_DIR}/scripts/gpu-emu-coverage.sh]=] --reset [=[${GPU_EMU_LOG_DIR}]=])\n")
  string(APPEND content "set_tests_properties(gpu_emu.kernel_log_reset PROPERTIES FIXTURES_SETUP gpu_emu_kernel_log)\n")
  if(NOT GPU_EMU_ONLY)
    list(APPEND emu_groups onnx_node_all.gpu_emu_0 onnx_node_all.gpu_emu_1)
    string(APPEND content "add_test(gpu_emu.kernel_coverage bash [=[${SOURCE_DIR}/scripts/gpu-emu-coverage.sh]=] --logs [=[${GPU_EMU_LOG_DIR}]=])\n")
    string(APPEND content "set_tests_properties(gpu_emu.kernel_coverage PROPERTIES DEPENDS [=[${emu_groups}]=])\n")
  endif()
endif()
file(WRITE "${CTEST_FILE}" "${content}")
