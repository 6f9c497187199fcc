// porta_platform_drift — how much this machine's own capacity moves while it sits idle.
//
//   build/bin/porta_platform_drift [SECONDS]   (default 60)
//
// No porta code: plain loops, so whatever moves here moves under every benchmark too. Every
// second it prints, for 1 and 2 threads (OpenMP), the median of
//   stream : y[i] = max(x[i], 0) over 64 MiB in, 64 MiB out (what Relu 4096x4096 does), GB/s
//   fma    : independent FMA chains in registers, no memory traffic, GFLOP/s
// and at the end the min/median/max of each column. When the 2-thread columns jump between
// about one and two times the 1-thread ones while the 1-thread ones stay put, the second
// core is being taken away and given back by the host (vCPUs sharing a physical core, or one
// of them descheduled), not by anything the benchmarked code does (docs/PERFORMANCE.md,
// "Run-to-run agreement").
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// GB/s of one pass (bytes read + written).
double stream_pass(const float* x, float* y, long n, int threads) {
  auto t0 = Clock::now();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (long i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
  return 8.0 * static_cast<double>(n) / seconds_since(t0) / 1e9;
}

// GFLOP/s of 16 independent 16-lane FMA chains per thread (enough to cover FMA latency).
double fma_pass(int threads, float* sink) {
  constexpr int kChains = 16, kLanes = 16;
  constexpr long kIters = 200000;
  auto t0 = Clock::now();
#pragma omp parallel num_threads(threads)
  {
    float acc[kChains][kLanes];
    for (int c = 0; c < kChains; ++c)
      for (int l = 0; l < kLanes; ++l) acc[c][l] = 1.f + 1e-3f * static_cast<float>(c + l);
    const float a = 0.999999f, b = 1e-7f;
    for (long it = 0; it < kIters; ++it)
      for (int c = 0; c < kChains; ++c)
#pragma omp simd
        for (int l = 0; l < kLanes; ++l) acc[c][l] = acc[c][l] * a + b;
    float s = 0;
    for (int c = 0; c < kChains; ++c)
      for (int l = 0; l < kLanes; ++l) s += acc[c][l];
#pragma omp atomic
    *sink += s;
  }
  return 2.0 * kChains * kLanes * kIters * threads / seconds_since(t0) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  double duration = argc > 1 ? std::atof(argv[1]) : 60.0;
  if (!(duration > 0)) {
    std::fprintf(stderr, "usage: %s [SECONDS > 0]\n", argv[0]);
    return 2;
  }
  const long n = 4096L * 4096;
  std::vector<float> x(n), y(n);
  for (long i = 0; i < n; ++i) x[i] = static_cast<float>(i % 7) - 3.f;
  float sink = 0;
  std::vector<double> cols[4];
  std::printf("%7s %14s %14s %14s %14s\n", "t (s)", "stream 1T GB/s", "stream 2T GB/s", "fma 1T GFLOP/s",
              "fma 2T GFLOP/s");
  auto start = Clock::now();
  while (seconds_since(start) < duration) {
    // One row per second: the median of every pass of that second.
    std::vector<double> samples[4];
    auto row_start = Clock::now();
    while (seconds_since(row_start) < 1.0) {
      for (int t = 0; t < 2; ++t) {
        for (int k = 0; k < 5; ++k) samples[t].push_back(stream_pass(x.data(), y.data(), n, t + 1));
        for (int k = 0; k < 3; ++k) samples[2 + t].push_back(fma_pass(t + 1, &sink));
      }
    }
    std::printf("%7.0f", seconds_since(start));
    for (int c = 0; c < 4; ++c) {
      cols[c].push_back(median(samples[c]));
      std::printf(" %14.1f", cols[c].back());
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  std::printf("%7s", "min");
  for (auto& c : cols) std::printf(" %14.1f", *std::min_element(c.begin(), c.end()));
  std::printf("\n%7s", "median");
  for (auto& c : cols) std::printf(" %14.1f", median(c));
  std::printf("\n%7s", "max");
  for (auto& c : cols) std::printf(" %14.1f", *std::max_element(c.begin(), c.end()));
  std::printf("\n");
  return sink == 12345.f ? 1 : 0;  // keeps the FMA results alive
}
