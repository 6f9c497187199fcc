// porta fuzz — what the targets share: bounded memory and one thread, a folder with an
// external-data file that ONNX tensors may point into, and the checks on accepted tensors.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "porta/tensor.hpp"

namespace porta::fuzz {

/// Size of the external-data file "weights.bin" in external_data_dir().
constexpr size_t kExternalBytes = 4096;

/// Caps porta's cpu allocations (a tiny model may legitimately ask for gigabytes; porta must
/// then refuse with OutOfMemory, which PORTA_MEMORY_LIMIT makes testable) and keeps oneDNN /
/// OpenMP on one thread, so that runs are reproducible and share the machine politely.
/// Values already in the environment win.
inline void limit_resources() {
  setenv("PORTA_MEMORY_LIMIT", "cpu:64MiB", 0);
  setenv("OMP_NUM_THREADS", "1", 0);
}

/// A folder holding weights.bin (kExternalBytes of a fixed pattern), created once; ONNX
/// external-data entries in fuzzed inputs resolve against it.
inline std::string external_data_dir() {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "porta_fuzz_external_data";
  fs::path file = dir / "weights.bin";
  std::error_code ec;
  if (fs::file_size(file, ec) == kExternalBytes && !ec) return dir.string();
  fs::create_directories(dir, ec);
  // Written aside and renamed: several fuzzers may start at once.
  fs::path tmp = dir / ("weights.bin.tmp" + std::to_string(getpid()));
  {
    std::ofstream f(tmp, std::ios::binary);
    for (size_t i = 0; i < kExternalBytes; ++i) f.put(static_cast<char>((i * 37 + 11) & 0xff));
  }
  fs::rename(tmp, file, ec);
  return dir.string();
}

/// What every tensor porta accepted from a file must satisfy: on the cpu, as many bytes as its
/// shape and dtype say, and bools stored as 0 or 1. Traps (a crash libFuzzer reports) if not.
inline void check_accepted(const porta::Tensor& t) {
  if (t.device() != porta::Device::cpu() || t.nbytes() != static_cast<size_t>(t.numel()) * porta::dtype_size(t.dtype()))
    __builtin_trap();
  if (t.dtype() == porta::DType::boolean) {
    const auto* b = static_cast<const unsigned char*>(t.raw_data());
    for (int64_t i = 0; i < t.numel(); ++i)
      if (b[i] > 1) __builtin_trap();
  }
}

/// With PORTA_FUZZ_VERBOSE set, prints why an input was refused (for reading a replay).
inline void note_refusal(const std::exception& e) {
  static const bool verbose = std::getenv("PORTA_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "  refused: %s\n", e.what());
}

}  // namespace porta::fuzz
