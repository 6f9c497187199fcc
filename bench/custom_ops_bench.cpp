// porta's custom ops (ai.porta): each perf case (OpCase::perf) timed three ways on the cpu —
//   kernel/<Op>/<case>     the registered cpu kernel called directly with preallocated outputs
//   session/<Op>/<case>    a one-node Session (what a model run pays), kernel path
//   composite/<Op>/<case>  the same Session compiled with the kernel disabled (decomposition)
// plus copy/parallel_memcpy_256MiB, the machine's measured copy bandwidth (read + write bytes).
// Counters: GB/s (input + output bytes per call), GFLOP/s (the op's flops), and bw_fraction
// = GB/s / measured copy GB/s for the memory-bound ops. Run:
//   build/bin/porta_bench_micro --benchmark_filter='custom|copy' --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "porta/porta.hpp"
#include "runtime/graph.hpp"
#include "runtime/registry.hpp"

namespace {

using namespace porta;

// Copy bandwidth with two threads over 256 MiB buffers (best of 5), bytes read + written.
double measured_copy_gbps() {
  static double gbps = [] {
    const size_t n = size_t{256} << 20;
    std::vector<char> src(n, 1), dst(n, 0);
    double best = 0;
    for (int rep = 0; rep < 5; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      std::thread t([&] { std::memcpy(dst.data(), src.data(), n / 2); });
      std::memcpy(dst.data() + n / 2, src.data() + n / 2, n / 2);
      t.join();
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, 2.0 * n / s / 1e9);
    }
    return best;
  }();
  return gbps;
}

void BM_copy(benchmark::State& state) {
  const size_t n = size_t{256} << 20;
  std::vector<char> src(n, 1), dst(n, 0);
  for (auto _ : state) {
    std::thread t([&] { std::memcpy(dst.data(), src.data(), n / 2); });
    std::memcpy(dst.data() + n / 2, src.data() + n / 2, n / 2);
    t.join();
    benchmark::DoNotOptimize(dst.data());
  }
  state.counters["GB/s"] = benchmark::Counter(2.0 * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

Tensor random_input(const InputSpec& s, DType case_dtype, std::mt19937_64& rng) {
  DType dt = s.dtype.value_or(case_dtype);
  std::vector<double> v(static_cast<size_t>(shape_numel(s.shape)));
  std::uniform_real_distribution<double> d(s.lo, s.hi);
  for (auto& x : v) x = is_floating(dt) ? d(rng) : std::floor(d(rng));
  return Tensor::from_values(v, s.shape, dt);
}

Model one_node_model(const OpSchema& op, const std::vector<Tensor>& inputs, const Attributes& attrs,
                     std::map<std::string, Tensor>& named) {
  auto g = std::make_shared<Graph>();
  Node n;
  n.name = op.name;
  n.op = &op;
  n.attrs = complete_attributes(op, attrs, "");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      n.inputs.push_back(-1);
      continue;
    }
    std::string name = str("in", i);
    int v = g->add_value(name);
    g->values[v].dtype = inputs[i].dtype();
    g->values[v].shape = inputs[i].shape();
    g->inputs.push_back(v);
    g->input_descs.push_back({name, inputs[i].dtype(), inputs[i].shape(), {}});
    n.inputs.push_back(v);
    named[name] = inputs[i];
  }
  Tensor shape_of = call_op(op.name, inputs, attrs, 1).at(0);
  int out = g->add_value("out");
  g->values[out].dtype = shape_of.dtype();
  n.outputs = {out};
  g->outputs = {out};
  g->output_descs.push_back({"out", shape_of.dtype(), shape_of.shape(), {}});
  g->nodes.push_back(std::move(n));
  return Model(std::shared_ptr<const Graph>(std::move(g)));
}

struct Case {
  const OpSchema* op;
  OpCase c;
  DType dtype;
};

void set_counters(benchmark::State& state, const Case& k, const std::vector<Tensor>& ins, const Tensor& out) {
  double bytes = static_cast<double>(out.nbytes());
  std::vector<Shape> in_shapes;
  for (auto& t : ins) {
    bytes += t.defined() ? static_cast<double>(t.nbytes()) : 0;
    in_shapes.push_back(t.defined() ? t.shape() : Shape{});
  }
  double it = static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(bytes * it / 1e9, benchmark::Counter::kIsRate);
  Attributes full = complete_attributes(*k.op, k.c.attrs, "");
  double flops = k.op->flops ? k.op->flops(in_shapes, {out.shape()}, full) : 0;
  if (flops > 0) state.counters["GFLOP/s"] = benchmark::Counter(flops * it / 1e9, benchmark::Counter::kIsRate);
  state.counters["bw_fraction"] =
      benchmark::Counter(bytes * it / 1e9 / measured_copy_gbps(), benchmark::Counter::kIsRate);
}

void BM_kernel(benchmark::State& state, Case k) {
  std::mt19937_64 rng(7);
  std::vector<Tensor> ins;
  for (auto& s : k.c.inputs) ins.push_back(s.absent ? Tensor() : random_input(s, k.dtype, rng));
  Tensor probe = call_op(k.op->name, ins, k.c.attrs, 1).at(0);
  Attributes full = complete_attributes(*k.op, k.c.attrs, "");
  const KernelDef* kernel = nullptr;
  for (const KernelDef* d : kernels_for(*k.op))
    if (d->backend == DeviceType::cpu && dtype_in(d->dtypes, ins[0].dtype())) kernel = d;
  if (!kernel) {
    state.SkipWithError("no cpu kernel");
    return;
  }
  KernelContext ctx;
  ctx.op = k.op;
  ctx.attrs = &full;
  ctx.device = Device::cpu();
  ctx.backend = &backend_for(Device::cpu());
  ctx.inputs = ins;
  ctx.outputs = {Tensor::zeros(probe.shape(), probe.dtype())};
  if (kernel->supports && !kernel->supports(ctx).empty()) {
    state.SkipWithError("the cpu kernel declines this case");
    return;
  }
  kernel->fn(ctx);
  for (auto _ : state) kernel->fn(ctx);
  set_counters(state, k, ins, ctx.outputs[0]);
}

void BM_session(benchmark::State& state, Case k, bool composite) {
  std::mt19937_64 rng(7);
  std::vector<Tensor> ins;
  for (auto& s : k.c.inputs) ins.push_back(s.absent ? Tensor() : random_input(s, k.dtype, rng));
  std::map<std::string, Tensor> named;
  Model model = one_node_model(*k.op, ins, k.c.attrs, named);
  if (composite) {
    setenv("PORTA_DISABLE_KERNELS", str("cpu:", k.op->name).c_str(), 1);
    detail::reload_disabled_kernels();
  }
  Session session(model);
  Tensor out = session.run(named).at(0);  // compiles with the kernels as they are now
  if (composite) {
    unsetenv("PORTA_DISABLE_KERNELS");
    detail::reload_disabled_kernels();
  }
  for (auto _ : state) benchmark::DoNotOptimize(session.run(named));
  set_counters(state, k, ins, out);
}

const bool registered = [] {
  benchmark::RegisterBenchmark("copy/parallel_memcpy_256MiB", BM_copy)->Unit(benchmark::kMillisecond)->UseRealTime();
  for (const OpSchema* op : all_ops()) {
    if (op->domain != "ai.porta" || !op->cases) continue;
    for (const OpCase& c : op->cases()) {
      if (!c.perf) continue;
      DType dt = dtype_in(c.dtypes, DType::f32) ? DType::f32 : DType::u8;
      Case k{op, c, dt};
      std::string suffix = str(op->name, "/", c.name);
      benchmark::RegisterBenchmark(("custom_kernel/" + suffix).c_str(), BM_kernel, k)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
      benchmark::RegisterBenchmark(("custom_session/" + suffix).c_str(), BM_session, k, false)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
      benchmark::RegisterBenchmark(("custom_composite/" + suffix).c_str(), BM_session, k, true)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
    }
  }
  return true;
}();

}  // namespace
