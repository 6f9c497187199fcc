// Tests of cpu kernels' parallel paths: two OpenMP threads (the machine may have one core), no
// load adaptation (a loaded CI machine would otherwise keep every call on one thread,
// kernels/cpu/thread_policy.hpp) and the base thresholds (not scaled by this machine's measured
// fork/join), while a TwoThreads lives.
#pragma once
#include <omp.h>

#include "kernels/cpu/thread_policy.hpp"

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

}  // namespace porta::test
