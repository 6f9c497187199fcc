// porta backends — the sizing and timing policy every backend's arithmetic-peak probe shares
// (Backend::measure_fma_gflops), and the exact arithmetic its chains are checked against.
//
// Each probe runs chains x <- fma(x, 1, step) from distinct starting values. With `step` a power
// of two and every value a multiple of it below 2^(mantissa bits) * step, each fma is exact, so
// a chain's final value is start + n * step exactly: the check is an equality, and a probe the
// compiler shortened or dropped cannot pass it. The multiplier 1 and the step reach the device as
// run-time values, so nothing can be folded at compile time.
#pragma once
#include <algorithm>
#include <cstdint>

namespace porta::probe {

/// What one run of a probe did.
struct Run {
  double flops = 0;    ///< floating-point operations executed (an fma counts 2)
  double seconds = 0;  ///< device (or wall) time the run took
};

/// Sizes the probe, then measures it: the scale doubles from 1 while the fastest of three runs
/// takes less than `min_seconds` (and the scale is below `max_scale`); at the scale reached,
/// `repeats` more runs. Returns the best rate in GFLOP/s: the run the rest of the machine
/// disturbed least. Sizing by the fastest of three keeps one descheduled run on a busy machine
/// from stopping the growth at a size too small to time.
template <class RunFn>
double best_gflops(RunFn&& run, uint64_t max_scale, double min_seconds = 0.02, int repeats = 5) {
  double best = 0;
  auto timed = [&](uint64_t scale) {
    Run r = run(scale);
    if (r.seconds > 0) best = std::max(best, r.flops / r.seconds);
    return r.seconds;
  };
  uint64_t scale = 1;
  for (;;) {
    double fastest = timed(scale);
    for (int i = 0; i < 2; ++i) fastest = std::min(fastest, timed(scale));
    if (fastest >= min_seconds || scale >= max_scale) break;
    scale = std::min(max_scale, scale * 2);
    best = 0;  // rates of runs too short to time are not kept
  }
  for (int i = 0; i < repeats; ++i) timed(scale);
  return best / 1e9;
}

}  // namespace porta::probe
