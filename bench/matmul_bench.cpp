// MatMul 1024^3 f32: porta's eager MatMul call against oneDNN's matmul primitive called
// directly (its own engine, stream and primitive; nothing shared with porta's kernel).
// Both report GFLOP/s; porta's target is >= 95% of the direct call.
#include <benchmark/benchmark.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <vector>

#include "porta/porta.hpp"

namespace {

constexpr int64_t kN = 1024;
constexpr double kFlops = 2.0 * kN * kN * kN;

std::vector<float> random_matrix() {
  std::vector<float> v(kN * kN);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (float& x : v) x = d(rng);
  return v;
}

void set_gflops(benchmark::State& state) {
  state.counters["GFLOP/s"] = benchmark::Counter(kFlops * static_cast<double>(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
}

void BM_porta_matmul_f32_1024(benchmark::State& state) {
  std::vector<float> a = random_matrix(), b = random_matrix();
  porta::Tensor ta = porta::Tensor::from_host(a.data(), {kN, kN}, porta::DType::f32);
  porta::Tensor tb = porta::Tensor::from_host(b.data(), {kN, kN}, porta::DType::f32);
  porta::call_op("MatMul", {ta, tb});  // warm the primitive cache
  for (auto _ : state) benchmark::DoNotOptimize(porta::call_op("MatMul", {ta, tb}));
  set_gflops(state);
}

void BM_onednn_matmul_f32_1024(benchmark::State& state) {
  std::vector<float> a = random_matrix(), b = random_matrix(), c(kN * kN);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  using tag = dnnl::memory::format_tag;
  dnnl::memory::desc md({kN, kN}, dnnl::memory::data_type::f32, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), eng);
  dnnl::matmul mm(pd);
  dnnl::memory ma(md, eng, a.data()), mb(md, eng, b.data()), mc(md, eng, c.data());
  for (auto _ : state) {
    mm.execute(strm, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    strm.wait();
    benchmark::DoNotOptimize(c.data());
  }
  set_gflops(state);
}

}  // namespace

BENCHMARK(BM_porta_matmul_f32_1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_onednn_matmul_f32_1024)->Unit(benchmark::kMillisecond)->UseRealTime();
