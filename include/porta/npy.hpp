// porta — NumPy .npy files (C order; f32 f16 f64 i64 i32 i8 u8 bool).
#pragma once
#include <string>

#include "porta/tensor.hpp"

namespace porta {

/// Reads a .npy file into a cpu tensor. Throws InvalidArgument saying what is malformed.
Tensor read_npy(const std::string& path);
/// Parses .npy bytes.
Tensor parse_npy(const void* data, size_t size, const std::string& what = "npy data");
/// Writes a tensor (any device; copied to host) as .npy.
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace porta
