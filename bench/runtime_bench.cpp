// Runtime costs the CLI cannot isolate:
//   BM_tensor_empty/<bytes>      Tensor::empty on cpu (allocation + bookkeeping + free).
//   BM_copy_host_to_cpu/<bytes>  Tensor::copy_from_host into a cpu tensor (GB/s).
//   BM_copy_cpu_to_host/<bytes>  Tensor::copy_to_host from a cpu tensor (GB/s).
//   BM_memcpy/<bytes>            plain std::memcpy of the same size: the machine's copy ceiling.
//   BM_session_startup_cnn       Model::load + Session + first run of models/cnn (µs).
//   BM_elementwise_add_4096sq    the cpu Add kernel on two 4096x4096 f32 tensors into a reused
//                                output (GB/s counts 3 x 64 MiB moved per call);
//   BM_eager_add_4096sq          the same through call_op (a fresh output every call).
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "porta/porta.hpp"

namespace {

void set_bytes(benchmark::State& state, double bytes_per_iter) {
  state.counters["GB/s"] = benchmark::Counter(bytes_per_iter * static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
}

void BM_tensor_empty(benchmark::State& state) {
  int64_t n = state.range(0) / 4;
  for (auto _ : state) benchmark::DoNotOptimize(porta::Tensor::empty({n}, porta::DType::f32));
}

void BM_copy_host_to_cpu(benchmark::State& state) {
  size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<char> host(bytes, 1);
  porta::Tensor t = porta::Tensor::empty({static_cast<int64_t>(bytes)}, porta::DType::u8);
  for (auto _ : state) {
    t.copy_from_host(host.data(), bytes);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2.0 * static_cast<double>(bytes));  // read + write
}

void BM_copy_cpu_to_host(benchmark::State& state) {
  size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<char> host(bytes, 1);
  porta::Tensor t = porta::Tensor::zeros({static_cast<int64_t>(bytes)}, porta::DType::u8);
  for (auto _ : state) {
    t.copy_to_host(host.data(), bytes);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2.0 * static_cast<double>(bytes));
}

void BM_memcpy(benchmark::State& state) {
  size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<char> a(bytes, 1), b(bytes);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2.0 * static_cast<double>(bytes));
}

void BM_session_startup_cnn(benchmark::State& state) {
  const std::string dir = std::string(PORTA_SOURCE_DIR) + "/models/cnn";
  porta::Tensor x = porta::read_npy(dir + "/input_0.npy");
  std::string name = porta::Model::load(dir + "/model.onnx").inputs().at(0).name;
  for (auto _ : state) {
    porta::Model model = porta::Model::load(dir + "/model.onnx");
    porta::Session session(model);
    benchmark::DoNotOptimize(session.run({{name, x}}));
  }
}

// The registered cpu Add kernel called directly with a preallocated output (what a Session
// does), and the eager call (which allocates, and page-faults, a fresh 64 MiB output).
void BM_elementwise_add_4096sq(benchmark::State& state) {
  const int64_t n = 4096;
  porta::Tensor a = porta::Tensor::zeros({n, n}, porta::DType::f32);
  porta::Tensor b = porta::Tensor::zeros({n, n}, porta::DType::f32);
  const porta::KernelDef* kernel = nullptr;
  for (const porta::KernelDef* k : porta::kernels_for("Add"))
    if (k->backend == porta::DeviceType::cpu) kernel = k;
  if (!kernel) return state.SkipWithError("no cpu Add kernel");
  porta::Attributes attrs;
  porta::KernelContext ctx;
  ctx.op = porta::find_op("Add");
  ctx.attrs = &attrs;
  ctx.backend = &porta::backend_for(porta::Device::cpu());
  ctx.inputs = {a, b};
  ctx.outputs = {porta::Tensor::zeros({n, n}, porta::DType::f32)};
  for (auto _ : state) {
    kernel->fn(ctx);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 3.0 * static_cast<double>(n * n * 4));
}

void BM_eager_add_4096sq(benchmark::State& state) {
  const int64_t n = 4096;
  porta::Tensor a = porta::Tensor::zeros({n, n}, porta::DType::f32);
  porta::Tensor b = porta::Tensor::zeros({n, n}, porta::DType::f32);
  for (auto _ : state) benchmark::DoNotOptimize(porta::call_op("Add", {a, b}));
  set_bytes(state, 3.0 * static_cast<double>(n * n * 4));
}

}  // namespace

BENCHMARK(BM_tensor_empty)->Arg(64)->Arg(4096)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(BM_copy_host_to_cpu)->Arg(4096)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_copy_cpu_to_host)->Arg(4096)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_memcpy)->Arg(4096)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_session_startup_cnn)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_elementwise_add_4096sq)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_eager_add_4096sq)->Unit(benchmark::kMillisecond)->UseRealTime();
