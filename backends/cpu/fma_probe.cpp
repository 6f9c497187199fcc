// porta cpu — the arithmetic-peak probe (Backend::measure_fma_gflops): independent fma chains
// in vector registers on every core, through the widest fused multiply-add this cpu has
// (AVX-512, AVX2+FMA, or scalar std::fma), and bf16 dot products (AVX512_BF16's vdpbf16ps)
// where present. No memory traffic, no oneDNN, no porta kernel (backends/fma_probe.hpp).
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "backends/cpu/fma_probe.hpp"
#include "backends/fma_probe.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::cpu {
namespace {

constexpr int kChains = 16;             // independent accumulators: covers fma latency x pipes
constexpr float kStep = 1.0f / (1 << 20);  // 2^-20: sums stay exact below 8 (see fma_probe.hpp)
constexpr uint64_t kItersPerScale = 1 << 13;
constexpr uint64_t kMaxScale = 1 << 9;  // 2^22 iterations: every value stays below 4.1

// Chain c, lane l starts at (c * lanes + l) * 2^-12 (< 0.07, a multiple of the step).
float start_value(int chain, int lane, int lanes) { return static_cast<float>(chain * lanes + lane) / 4096.0f; }

// One thread's chains; `out` receives every lane's final value (kChains * lanes floats).
// Returns the operations executed.
__attribute__((target("avx512f"))) double chains_avx512(uint64_t iters, float one, float step, float* out) {
  __m512 x[kChains];
  alignas(64) float init[16];
  for (int c = 0; c < kChains; ++c) {
    for (int l = 0; l < 16; ++l) init[l] = start_value(c, l, 16);
    x[c] = _mm512_load_ps(init);
  }
  const __m512 a = _mm512_set1_ps(one), b = _mm512_set1_ps(step);
  for (uint64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) x[c] = _mm512_fmadd_ps(x[c], a, b);
  for (int c = 0; c < kChains; ++c) _mm512_storeu_ps(out + c * 16, x[c]);
  return 2.0 * 16 * kChains * static_cast<double>(iters);
}

__attribute__((target("avx2,fma"))) double chains_avx2(uint64_t iters, float one, float step, float* out) {
  __m256 x[kChains];
  alignas(32) float init[8];
  for (int c = 0; c < kChains; ++c) {
    for (int l = 0; l < 8; ++l) init[l] = start_value(c, l, 8);
    x[c] = _mm256_load_ps(init);
  }
  const __m256 a = _mm256_set1_ps(one), b = _mm256_set1_ps(step);
  for (uint64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) x[c] = _mm256_fmadd_ps(x[c], a, b);
  for (int c = 0; c < kChains; ++c) _mm256_storeu_ps(out + c * 8, x[c]);
  return 2.0 * 8 * kChains * static_cast<double>(iters);
}

double chains_scalar(uint64_t iters, float one, float step, float* out) {
  float x[kChains];
  for (int c = 0; c < kChains; ++c) x[c] = start_value(c, 0, 1);
  for (uint64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) x[c] = std::fma(x[c], one, step);
  std::memcpy(out, x, sizeof x);
  return 2.0 * kChains * static_cast<double>(iters);
}

// vdpbf16ps: each f32 lane adds the dot product of two bf16 pairs (4 operations). With the
// pairs (1, 1) and (step/2, step/2) a lane grows by exactly `step` per instruction.
__attribute__((target("avx512f,avx512bf16"))) double chains_bf16(uint64_t iters, float one, float step, float* out) {
  __m512 x[kChains];
  alignas(64) float init[16];
  for (int c = 0; c < kChains; ++c) {
    for (int l = 0; l < 16; ++l) init[l] = start_value(c, l, 16);
    x[c] = _mm512_load_ps(init);
  }
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(one), _mm512_set1_ps(one));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(step / 2), _mm512_set1_ps(step / 2));
  for (uint64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) x[c] = _mm512_dpbf16_ps(x[c], a, b);
  for (int c = 0; c < kChains; ++c) _mm512_storeu_ps(out + c * 16, x[c]);
  return 4.0 * 16 * kChains * static_cast<double>(iters);
}

using ChainFn = double (*)(uint64_t, float, float, float*);

// The chains' multiplier (1) and step, opaque to the compiler: known only at run time, so it
// cannot fold the chains into one multiplication.
struct ChainOperands {
  float one, step;
};
ChainOperands opaque_operands() {
  volatile float one = 1.0f, step = kStep;
  return {one, step};
}

struct Variant {
  ChainFn fn = nullptr;
  int lanes = 0;
  const char* name = "";
};

Variant pick(DType dtype) {
  __builtin_cpu_init();
  if (dtype == DType::bf16) {
    if (__builtin_cpu_supports("avx512bf16")) return {chains_bf16, 16, "avx512_bf16 vdpbf16ps"};
    return {};
  }
  if (dtype != DType::f32) return {};
  if (__builtin_cpu_supports("avx512f")) return {chains_avx512, 16, "avx512f vfmadd"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {chains_avx2, 8, "avx2 vfmadd"};
  return {chains_scalar, 1, "scalar fma"};
}

}  // namespace

double measure_fma_gflops(DType dtype) {
  Variant v = pick(dtype);
  if (!v.fn) return 0.0;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const auto [one, step] = opaque_operands();
  const size_t per_thread = static_cast<size_t>(kChains) * v.lanes;
  std::vector<float> out(per_thread * threads);
  auto run = [&](uint64_t scale) {
    uint64_t iters = scale * kItersPerScale;
    std::vector<double> flops(threads);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { flops[t] = v.fn(iters, one, step, out.data() + t * per_thread); });
    for (auto& th : pool) th.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (unsigned t = 0; t < threads; ++t)
      for (size_t i = 0; i < per_thread; ++i) {
        int chain = static_cast<int>(i) / v.lanes, lane = static_cast<int>(i) % v.lanes;
        float expect = start_value(chain, lane, v.lanes) + static_cast<float>(iters) * kStep;
        if (out[t * per_thread + i] != expect)
          throw BackendError(str("[cpu] the ", v.name, " peak probe computed ", out[t * per_thread + i],
                                 " where its chain must end at ", expect, " (", iters, " steps): the probe's",
                                 " arithmetic is not what it measures, so no ceiling is reported"));
      }
    double total = 0;
    for (double f : flops) total += f;
    return probe::Run{total, s};
  };
  return probe::best_gflops(run, kMaxScale);
}

const Bf16Rate& bf16_rate() {
  static const Bf16Rate rate = [] {
    Bf16Rate r;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16")) return r;
    const auto [one, step] = opaque_operands();
    std::vector<float> out(static_cast<size_t>(kChains) * 16);
    auto best = [&](ChainFn fn) {
      double gflops = 0;
      for (int run = 0; run < 5; ++run) {
        auto t0 = std::chrono::steady_clock::now();
        double ops = fn(kItersPerScale, one, step, out.data());
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (s > 0) gflops = std::max(gflops, ops / s / 1e9);
      }
      return gflops;
    };
    r.f32 = best(chains_avx512);
    r.bf16 = best(chains_bf16);
    return r;
  }();
  return rate;
}

}  // namespace porta::cpu
