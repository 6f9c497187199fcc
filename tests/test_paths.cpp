// porta tests — the build's paths (tests/test_paths.hpp), given by CMake to this file alone.
#include "tests/test_paths.hpp"

namespace porta::test {

const char* source_dir() { return PORTA_TEST_SOURCE_PATH; }
const char* binary_dir() { return PORTA_TEST_BINARY_PATH; }
const char* test_plugin_dir() { return PORTA_TEST_PLUGIN_PATH; }

}  // namespace porta::test
