# ctest fused_leaky_relu_example: builds examples/fused_leaky_relu with porta_add_plugin against
# the package porta exports into its build tree (PORTA_DIR), then checks the plugin on DEVICES
# with the build tree's CLI (tests/fused_leaky_relu_check.sh); TORCH_LIB (when the torch library
# is built) adds the op from PyTorch.
file(REMOVE_RECURSE ${BUILD})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE}/examples/fused_leaky_relu -B ${BUILD} -G Ninja
                        -Dporta_DIR=${PORTA_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring examples/fused_leaky_relu against the build tree failed:\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building examples/fused_leaky_relu failed:\n${out}\n${err}")
endif()
string(REPLACE "," ";" devices "${DEVICES}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env "PORTA_TORCH_LIB=${TORCH_LIB}" ${SOURCE}/tests/fused_leaky_relu_check.sh ${PORTA_CLI} ${BUILD}/libfused_leaky_relu.so
                        ${SOURCE} ${BUILD}/check ${devices}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "examples/fused_leaky_relu failed its checks:\n${err}")
endif()
