// The C ABI's cost per op call: the same small op (so dispatch, not arithmetic, dominates)
// through porta::call_op and through porta_op_call (handle checks, output handle made and
// freed). Target: the C call costs at most 200 ns more than the C++ call.
#include <benchmark/benchmark.h>

#include <vector>

#include "porta/porta.h"
#include "porta/porta.hpp"

namespace {

constexpr int64_t kElements = 16;

void BM_OpCall_Cpp(benchmark::State& state) {
  std::vector<float> host(kElements, -1.0f);
  porta::Tensor x = porta::Tensor::wrap_host(host.data(), {kElements}, porta::DType::f32);
  for (auto _ : state) {
    std::vector<porta::Tensor> y = porta::call_op("Relu", {x});
    benchmark::DoNotOptimize(y);
  }
}
BENCHMARK(BM_OpCall_Cpp);

void BM_OpCall_CAbi(benchmark::State& state) {
  std::vector<float> host(kElements, -1.0f);
  int64_t shape[1] = {kElements};
  porta_tensor x = nullptr;
  if (porta_tensor_wrap_host(host.data(), host.size() * 4, PORTA_F32, shape, 1, &x) != PORTA_OK) {
    state.SkipWithError(porta_last_error());
    return;
  }
  for (auto _ : state) {
    porta_tensor y = nullptr;
    if (porta_op_call("Relu", &x, 1, nullptr, &y, 1) != PORTA_OK) {
      state.SkipWithError(porta_last_error());
      break;
    }
    porta_tensor_free(y);
  }
  porta_tensor_free(x);
}
BENCHMARK(BM_OpCall_CAbi);

// Handle validation alone (a registry lookup), the part every C entry point pays.
void BM_HandleCheck_CAbi(benchmark::State& state) {
  int64_t shape[1] = {kElements};
  porta_tensor x = nullptr;
  porta_tensor_create({PORTA_DEVICE_CPU, 0}, PORTA_F32, shape, 1, &x);
  size_t rank = 0;
  for (auto _ : state) {
    porta_tensor_rank(x, &rank);
    benchmark::DoNotOptimize(rank);
  }
  porta_tensor_free(x);
}
BENCHMARK(BM_HandleCheck_CAbi);

}  // namespace
