// porta tests — where the test binary finds the source tree, its build tree and the test
// plugins. The paths are compiled into tests/test_paths.cpp alone, so no other test source's
// object depends on where the checkout lies, and ccache reuses them in another checkout of the
// same sources (CI builds a clean clone).
#pragma once

namespace porta::test {

const char* source_dir();       ///< the source tree (models/, python/)
const char* binary_dir();       ///< the build tree (bin/porta, scratch files)
const char* test_plugin_dir();  ///< the test plugins' libraries

}  // namespace porta::test

#define PORTA_SOURCE_DIR (::porta::test::source_dir())
#define PORTA_BINARY_DIR (::porta::test::binary_dir())
#define PORTA_TEST_PLUGIN_DIR (::porta::test::test_plugin_dir())
