// porta bench — the op suite: which (op, case, dtype) run where, and running them.
//
// Cases are the ops' own `cases` (the conformance tests' definitions): by default those marked
// `perf`; --case picks any case by name; an op named with --op that has no perf case runs its
// largest case. Inputs are made once per case and dtype (seeded by op and case name) and
// copied to each device, so every device computes the same thing.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "runtime/bench_call.hpp"
#include "runtime/registry.hpp"
#include "tools/cmd_bench.hpp"

namespace porta::cli::bench {
namespace {

struct Planned {
  const OpSchema* op;
  OpCase c;
  DType dtype;
};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

double case_elements(const OpCase& c) {
  double n = 0;
  for (auto& s : c.inputs) n += s.absent ? 0.0 : static_cast<double>(shape_numel(s.shape));
  return n;
}

std::vector<Planned> plan(const Selection& sel) {
  std::vector<const OpSchema*> ops;
  if (sel.ops.empty()) {
    ops = all_ops();
  } else {
    for (auto& name : sel.ops) {
      const OpSchema* op = find_op(name);
      if (!op) throw InvalidArgument(str("[bench] ", describe_unknown_op(name), " (porta devices --kernels lists them)"));
      ops.push_back(op);
    }
  }
  std::vector<DType> dtypes;
  for (auto& d : sel.dtypes) dtypes.push_back(dtype_from_name(d));
  std::vector<Planned> out;
  for (const OpSchema* op : ops) {
    if (!op->cases) continue;
    std::vector<OpCase> cases = op->cases(), chosen;
    for (auto& c : cases)
      if (sel.cases.empty() ? c.perf : contains(sel.cases, c.name)) chosen.push_back(c);
    if (chosen.empty() && sel.cases.empty() && !sel.ops.empty() && !cases.empty())
      chosen.push_back(*std::max_element(cases.begin(), cases.end(), [](const OpCase& a, const OpCase& b) {
        return case_elements(a) < case_elements(b);
      }));
    for (auto& c : chosen) {
      if (dtypes.empty()) {
        DType dt = DType::f32;
        if (!dtype_in(c.dtypes, dt))
          for (int i = 0; i < kNumDTypes; ++i)
            if (dtype_in(c.dtypes, static_cast<DType>(i))) { dt = static_cast<DType>(i); break; }
        out.push_back({op, c, dt});
      } else {
        for (DType dt : dtypes)
          if (dtype_in(c.dtypes, dt)) out.push_back({op, c, dt});
      }
    }
  }
  if (out.empty())
    throw InvalidArgument("[bench] no case matches the selection (--op, --case, --dtype); "
                          "cases are listed by `porta bench --list`");
  return out;
}

uint64_t seed_of(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: the same inputs on every run and machine
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string shapes_of(const std::vector<Tensor>& ins) {
  std::string s;
  for (auto& t : ins) s += str(s.empty() ? "" : ", ", t.defined() ? shape_str(t.shape()) : "-");
  return s;
}

// Disables the op's own kernel on one backend for the life of this object (PORTA_DISABLE_KERNELS),
// so the composite or the CPU fallback runs in its place.
class KernelDisabled {
 public:
  KernelDisabled(const std::string& op, DeviceType type) {
    const char* old = std::getenv("PORTA_DISABLE_KERNELS");
    had_ = old != nullptr;
    if (had_) old_ = old;
    std::string add = str(device_type_name(type), ":", op);
    setenv("PORTA_DISABLE_KERNELS", (old_.empty() ? add : old_ + "," + add).c_str(), 1);
    detail::reload_disabled_kernels();
  }
  ~KernelDisabled() {
    if (had_) setenv("PORTA_DISABLE_KERNELS", old_.c_str(), 1);
    else unsetenv("PORTA_DISABLE_KERNELS");
    detail::reload_disabled_kernels();
  }

 private:
  bool had_ = false;
  std::string old_;
};

Result run_one(const Planned& p, const std::vector<Tensor>& inputs, const Side& side, const Ceilings* ceilings,
               const Settings& settings) {
  Result r;
  r.op = p.op->qualified_name();
  r.case_name = p.c.name;
  r.dtype = dtype_name(p.dtype);
  r.device = side.device.str();
  r.variant = side.no_kernel ? "no-kernel" : "";
  r.shapes = shapes_of(inputs);
  try {
    porta::bench::WorkCount w = porta::bench::count_work(*p.op, inputs, p.c.attrs, p.c.num_outputs);
    r.flops = w.flops;
    r.bytes = w.bytes;
    std::unique_ptr<KernelDisabled> disabled;
    if (side.no_kernel) disabled = std::make_unique<KernelDisabled>(p.op->qualified_name(), side.device.type);
    porta::bench::PreparedCall call(*p.op, inputs, p.c.attrs, p.c.num_outputs, side.device);
    r.path = path_name(call.path());
    r.note = call.reason();
    if (ceilings && ceilings->copy_gbps > 0) {
      // The least a run can take (at the device's ceilings). Over the budget: skipped unseen,
      // since even the warm-up would overrun. Slower-than-ceiling cases are caught by their
      // warm-up in measure().
      double peak = ceilings->peak_gflops(r.dtype);
      double least_s = std::max(peak > 0 ? r.flops / (peak * 1e9) : 0.0, r.bytes / (ceilings->copy_gbps * 1e9));
      if (least_s > settings.max_case_s) {
        r.status = "skipped";
        r.note = str("at least ", least_s, " s per run on ", r.device, " even at its ceilings, over --max-case-time ",
                     settings.max_case_s, " s");
        return r;
      }
    }
    r.m = measure(side.device, [&] { call.run(); }, settings);
    if (r.m.runs == 0) {
      r.status = "skipped";
      r.note = str("one warm-up run took ", r.m.warmup_us * 1e-6 / std::max(1, settings.warmup_runs),
                   " s, over --max-case-time ", settings.max_case_s, " s");
      return r;
    }
    rate(r, ceilings);
  } catch (const Error& e) {
    r.status = "error";
    r.note = str(e.kind(), ": ", e.what());
  }
  return r;
}

}  // namespace

void rate(Result& r, const Ceilings* c) {
  double us = r.time_us();
  if (us <= 0) return;
  r.gflops = r.flops / (us * 1e3);
  r.gbps = r.bytes / (us * 1e3);
  r.unstable = r.m.spread() > 0.10;
  if (!c) return;
  double peak = c->peak_gflops(r.dtype);
  double intensity = r.bytes > 0 ? r.flops / r.bytes : 0;
  if (r.flops > 0 && peak > 0 && (c->copy_gbps <= 0 || intensity >= c->ridge(r.dtype))) {
    r.bound = "compute";
    r.ceiling = peak;
    r.fraction = r.gflops / peak;
  } else if (c->copy_gbps > 0) {
    r.bound = "memory";
    r.ceiling = c->copy_gbps;
    r.fraction = r.gbps / c->copy_gbps;
  }
}

std::vector<Result> run_suite(const Selection& sel, const std::map<std::string, Ceilings>& ceilings,
                              const Settings& settings) {
  std::vector<Planned> planned = plan(sel);
  std::vector<Result> out;
  size_t total = planned.size() * sel.sides.size(), done = 0;
  auto start = std::chrono::steady_clock::now();
  for (const Planned& p : planned) {
    std::vector<Tensor> inputs;
    uint64_t seed = seed_of(p.op->name + "/" + p.c.name);
    for (size_t i = 0; i < p.c.inputs.size(); ++i)
      inputs.push_back(porta::bench::make_case_input(p.c.inputs[i], p.dtype, seed + i));
    for (const Side& side : sel.sides) {
      if (settings.progress) {
        double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::cerr << "\r\033[K[" << ++done << "/" << total << ", " << static_cast<int>(el) << " s] " << p.op->qualified_name()
                  << " " << p.c.name << " " << dtype_name(p.dtype) << " on " << side.label() << std::flush;
      }
      auto it = ceilings.find(side.device.str());
      out.push_back(run_one(p, inputs, side, it == ceilings.end() ? nullptr : &it->second, settings));
    }
  }
  if (settings.progress) std::cerr << "\r\033[K" << std::flush;
  return out;
}

}  // namespace porta::cli::bench
