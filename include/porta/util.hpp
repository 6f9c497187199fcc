// porta — small helpers shared by the runtime, ops and kernels.
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace porta {

/// Concatenates anything streamable into a string: str("[matmul] a is ", 4, "x", 3).
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// "4x3" for {4, 3}; "scalar" for {}.
std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace porta
