# Configures and builds a find_package(porta) consumer (SOURCE) in BUILD with porta_DIR=PORTA_DIR,
# the package porta exports into its build tree, then starts the program without arguments: it
# must load libporta from the build tree and print its usage. Run by ctest build_tree_package.
# CONSUMER_FLAGS: the sanitizer flags of a sanitizer build (an ASan/TSan libporta loads only into
# a program built with the same runtime).
file(REMOVE_RECURSE ${BUILD})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BUILD} -G Ninja -Dporta_DIR=${PORTA_DIR}
                        "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "find_package(porta) from the build tree failed:\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building against the build tree's porta failed:\n${out}\n${err}")
endif()
message(STATUS "examples/consumer built against ${PORTA_DIR}")
execute_process(COMMAND ${BUILD}/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT err MATCHES "usage: consumer")
  message(FATAL_ERROR "the consumer built against the build tree did not start (exit ${rc}):\n${out}\n${err}")
endif()
