// Conv N32 C64 56x56 3x3 pad 1 -> 64 channels, f32, through porta's eager Conv call. Run once
// with PORTA_CONV_LAYOUT=plain and once with =any to compare oneDNN on NCHW directly against
// oneDNN's own blocked layouts plus reorders (the kernel reads the variable once).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "porta/porta.hpp"

namespace {

void BM_porta_conv_n32_c64_56x56_k3(benchmark::State& state) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> x(32 * 64 * 56 * 56), w(64 * 64 * 3 * 3), b(64);
  for (auto* v : {&x, &w, &b})
    for (float& e : *v) e = d(rng);
  using porta::Tensor;
  Tensor tx = Tensor::from_host(x.data(), {32, 64, 56, 56}, porta::DType::f32);
  Tensor tw = Tensor::from_host(w.data(), {64, 64, 3, 3}, porta::DType::f32);
  Tensor tb = Tensor::from_host(b.data(), {64}, porta::DType::f32);
  porta::Attributes attrs{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  porta::call_op("Conv", {tx, tw, tb}, attrs);
  for (auto _ : state) benchmark::DoNotOptimize(porta::call_op("Conv", {tx, tw, tb}, attrs));
  double flops = 2.0 * 32 * 64 * 56 * 56 * 64 * 9;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_porta_conv_n32_c64_56x56_k3)->Unit(benchmark::kMillisecond)->UseRealTime();
