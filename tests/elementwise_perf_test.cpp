// Memory throughput of elementwise cpu kernels at 4096x4096 f32 (bytes read + written per
// second, best of several runs). Off by default; run with PORTA_ELEMENTWISE_PERF=1:
//   PORTA_ELEMENTWISE_PERF=1 porta_tests --gtest_filter='ElementwisePerf*'
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "porta/porta.hpp"

namespace porta::test {
namespace {

double best_seconds(const std::function<void()>& f) {
  f();  // warm up (page faults, primitive creation)
  double best = 1e9;
  for (int i = 0; i < 7; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

TEST(ElementwisePerf, Throughput4096x4096) {
  if (!std::getenv("PORTA_ELEMENTWISE_PERF")) GTEST_SKIP() << "set PORTA_ELEMENTWISE_PERF=1";
  Shape s{4096, 4096};
  std::vector<double> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5 + static_cast<double>(i % 1000) / 1000.0;
  Tensor a = Tensor::from_values(v, s, DType::f32), b = a.clone();
  Tensor cond = ops::binary("Greater", a, Tensor::scalar(1.0, DType::f32));
  double mb = static_cast<double>(a.nbytes());
  struct Item { const char* name; std::vector<Tensor> in; Attributes attrs; double bytes; };
  std::vector<Item> items = {
      {"Add", {a, b}, {}, 3 * mb},       {"Sub", {a, b}, {}, 3 * mb},
      {"Mul", {a, b}, {}, 3 * mb},       {"Div", {a, b}, {}, 3 * mb},
      {"Max", {a, b}, {}, 3 * mb},       {"Less", {a, b}, {}, 2.25 * mb},
      {"Abs", {a}, {}, 2 * mb},          {"Neg", {a}, {}, 2 * mb},
      {"Relu", {a}, {}, 2 * mb},         {"Exp", {a}, {}, 2 * mb},
      {"Log", {a}, {}, 2 * mb},          {"Sqrt", {a}, {}, 2 * mb},
      {"Tanh", {a}, {}, 2 * mb},         {"Sigmoid", {a}, {}, 2 * mb},
      {"Erf", {a}, {}, 2 * mb},          {"Sin", {a}, {}, 2 * mb},
      {"LeakyRelu", {a}, {}, 2 * mb},    {"Elu", {a}, {}, 2 * mb},
      {"Floor", {a}, {}, 2 * mb},        {"Reciprocal", {a}, {}, 2 * mb},
      {"Identity", {a}, {}, 2 * mb},
      {"Clip", {a, Tensor::scalar(0.7, DType::f32), Tensor::scalar(1.2, DType::f32)}, {}, 2 * mb},
      {"Pow", {a, Tensor::scalar(2.0, DType::f32)}, {}, 2 * mb},
      {"Where", {cond, a, b}, {}, 3.25 * mb},
      {"Cast", {a}, {{"to", int64_t{10}}}, 1.5 * mb},
  };
  std::printf("%-12s %21s %21s\n", "op", "kernel (output reused)", "eager call_op");
  for (auto& it : items) {
    // Kernel alone, writing into an output allocated once (as a session's memory plan does).
    std::vector<Tensor> outs = call_op(it.name, it.in, it.attrs, 1);
    const OpSchema* op = find_op(it.name);
    Attributes attrs = complete_attributes(*op, it.attrs, "");
    const KernelDef* k = nullptr;
    for (const KernelDef* c : kernels_for(it.name))
      if (c->backend == DeviceType::cpu) k = c;
    ASSERT_NE(k, nullptr) << it.name;
    KernelContext ctx;
    ctx.op = op;
    ctx.attrs = &attrs;
    ctx.backend = find_backend(DeviceType::cpu);
    ctx.inputs = it.in;
    ctx.outputs = outs;
    double kernel = best_seconds([&] { k->fn(ctx); });
    double eager = best_seconds([&] { call_op(it.name, it.in, it.attrs, 1); });
    std::printf("%-12s %8.2f ms %7.2f GB/s %8.2f ms %7.2f GB/s\n", it.name, kernel * 1e3,
                it.bytes / kernel / 1e9, eager * 1e3, it.bytes / eager / 1e9);
  }
}

}  // namespace
}  // namespace porta::test
