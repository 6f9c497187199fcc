// Tests of cpu kernels' parallel paths: two OpenMP threads (the machine may have one core), no
// load adaptation (a loaded CI machine would otherwise keep every call on one thread,
// kernels/cpu/thread_policy.hpp) and the base thresholds (not scaled by this machine's measured
// fork/join), while a TwoThreads lives. And of their register blockings per vector width
// (kernels/cpu/vector_width.hpp): every width this CPU runs, widest first, while a
// VectorWidth lives.
#pragma once
#include <omp.h>

#include <string>
#include <vector>

#include "kernels/cpu/cache_size.hpp"
#include "kernels/cpu/thread_policy.hpp"
#include "kernels/cpu/vector_width.hpp"

namespace porta::test {

class TwoThreads {
 public:
  TwoThreads() : saved_(omp_get_max_threads()) {
    omp_set_num_threads(2);
    cpu::set_thread_policy_adaptive(false);
    cpu::set_parallel_scale(1);
  }
  ~TwoThreads() {
    cpu::set_parallel_scale(0);
    cpu::set_thread_policy_adaptive(true);
    omp_set_num_threads(saved_);
  }
  TwoThreads(const TwoThreads&) = delete;
  TwoThreads& operator=(const TwoThreads&) = delete;

 private:
  int saved_;
};

/// The vector widths (bytes) the cpu kernels can run here: this CPU's and every narrower one.
inline std::vector<int> cpu_vector_widths() {
  std::vector<int> widths;
  for (int w = cpu::vector_bytes(); w >= 16; w /= 2) widths.push_back(w);
  return widths;
}

/// Kernels that block by vector_bytes() take `bytes` while this lives.
class VectorWidth {
 public:
  explicit VectorWidth(int bytes) { cpu::limit_vector_bytes(bytes); }
  ~VectorWidth() { cpu::limit_vector_bytes(0); }
  VectorWidth(const VectorWidth&) = delete;
  VectorWidth& operator=(const VectorWidth&) = delete;
  static std::string name(int bytes) { return std::to_string(bytes * 8) + "-bit vectors"; }
};

/// Kernels that ask whether a session's constants stay in cache (kernels/cpu/cache_size.hpp)
/// are told `cached` while this lives: the panels then skip, or keep, their prefetch of the
/// next panel whatever the test's weights weigh.
class ConstantsCached {
 public:
  explicit ConstantsCached(bool cached) { cpu::force_constants_cached(cached ? 1 : 0); }
  ~ConstantsCached() { cpu::force_constants_cached(-1); }
  ConstantsCached(const ConstantsCached&) = delete;
  ConstantsCached& operator=(const ConstantsCached&) = delete;
  static std::string name(bool cached) { return cached ? "constants cached" : "constants streamed"; }
};

}  // namespace porta::test
