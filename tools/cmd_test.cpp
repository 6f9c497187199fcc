// porta test — conformance of ops against their float64 reference on every device: each test
// case an op declares (OpSchema::cases; a plugin's porta_op_schema.cases), each of its dtypes,
// fresh random inputs, run on each device (natively, as its composite, or on the cpu with
// copies: the path is printed), compared with the reference run on the host in f64.
// Exits 1 when any result is over its tolerance or fails, 0 otherwise.
//
// Error: rel = ||device - reference||_2 / ||reference||_2 (max |difference| when the reference
// is all zeros); integer and boolean results must match exactly; NaN on one side only fails.
#include <cmath>
#include <iomanip>
#include <iostream>

#include "porta/plugin.hpp"
#include "runtime/bench_call.hpp"
#include "tools/cli.hpp"

namespace porta::cli {
namespace {

double default_tolerance(DType t) {
  switch (t) {
    case DType::f64: return 1e-10;
    case DType::f32: return 2e-5;
    case DType::f16: return 2e-3;
    case DType::bf16: return 1.6e-2;
    default: return 0.0;
  }
}

// Relative L2 error of `got` against `ref` (shapes must match); infinite for a one-sided NaN.
double relative_error(const Tensor& got, const Tensor& ref) {
  if (got.shape() != ref.shape()) return INFINITY;
  std::vector<double> a = got.to_doubles(), b = ref.to_doubles();
  double d2 = 0, r2 = 0, max_abs = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bool an = std::isnan(a[i]), bn = std::isnan(b[i]);
    if (an || bn) {
      if (an != bn) return INFINITY;
      continue;
    }
    if (a[i] == b[i]) continue;
    double d = std::abs(a[i] - b[i]);
    max_abs = std::max(max_abs, d);
    d2 += d * d;
    if (std::isfinite(b[i])) r2 += b[i] * b[i];
  }
  return r2 > 0 ? std::sqrt(d2 / r2) : max_abs;
}

std::vector<const OpSchema*> chosen_ops(const Args& args) {
  std::vector<const OpSchema*> ops;
  auto add = [&](const std::string& name) {
    const OpSchema* op = find_op(name);
    if (!op) throw InvalidArgument(str("[test] ", describe_unknown_op(name)));
    if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
  };
  // --op names the ops to test (after --plugin loaded what they need); without it, every op
  // the plugins add.
  std::vector<std::string> named = args.list("--op");
  for (const std::string& path : args.all("--plugin")) {
    std::string name = load_plugin(path);
    for (const PluginInfo& p : loaded_plugins())
      if (p.name == name && named.empty())
        for (const std::string& op : p.ops) add(op);
  }
  for (const std::string& name : named) add(name);
  if (ops.empty())
    throw InvalidArgument("[test] no op to test: give --plugin LIB.so (its ops) or --op OP[,OP...]"
                          " (a plugin that adds no op has nothing to test)");
  return ops;
}

}  // namespace

int cmd_test(const Args& args) {
  std::vector<const OpSchema*> ops = chosen_ops(args);
  std::vector<std::string> names = args.list("--device");
  std::vector<Device> devices = parse_devices(names.empty() ? std::vector<std::string>{"all"} : names);
  std::vector<DType> only;
  for (const std::string& d : args.list("--dtype")) only.push_back(dtype_from_name(d));
  uint64_t seed = static_cast<uint64_t>(args.get_int("--seed", 1));

  std::cout << std::left << std::setw(28) << "op" << " " << std::setw(20) << "case" << " " << std::setw(5) << "dtype"
            << " " << std::setw(10) << "device" << " " << std::setw(13) << "path" << " " << std::setw(10) << "rel error"
            << " result\n";
  int failed = 0, passed = 0;
  for (const OpSchema* op : ops) {
    std::vector<OpCase> cases = op->cases ? op->cases() : std::vector<OpCase>();
    if (cases.empty()) {
      std::cout << std::setw(28) << op->qualified_name()
                << " FAIL: no test cases (a plugin declares them in porta_op_schema.cases)\n";
      ++failed;
      continue;
    }
    for (const OpCase& c : cases) {
      for (int t = 0; t < kNumDTypes; ++t) {
        DType dtype = static_cast<DType>(t);
        if (!dtype_in(c.dtypes, dtype) || (!only.empty() && std::find(only.begin(), only.end(), dtype) == only.end()))
          continue;
        std::vector<Tensor> inputs;
        for (size_t i = 0; i < c.inputs.size(); ++i)
          inputs.push_back(bench::make_case_input(c.inputs[i], dtype, seed * 1000003u + i));
        std::vector<Tensor> ref;
        std::string ref_error;
        try {
          ref = reference_op(op->qualified_name(), inputs, c.attrs, c.num_outputs);
        } catch (const Error& e) {
          ref_error = e.what();
        }
        for (Device d : devices) {
          std::cout << std::setw(28) << op->qualified_name() << " " << std::setw(20) << c.name << " " << std::setw(5)
                    << dtype_name(dtype) << " " << std::setw(10) << d.str() << " ";
          std::string path = "-", verdict;
          double worst = 0;
          if (!ref_error.empty()) {
            verdict = "FAIL: the reference failed: " + ref_error;
          } else {
            try {
              bench::PreparedCall call(*op, inputs, c.attrs, c.num_outputs, d);
              path = std::string(path_name(call.path()));
              call.run();
              backend_for(d).synchronize(d.index);
              double tolerance = c.tolerance > 0 ? c.tolerance : default_tolerance(dtype);
              for (size_t k = 0; k < ref.size() && k < call.outputs().size(); ++k) {
                if (!ref[k].defined()) continue;
                worst = std::max(worst, relative_error(call.outputs()[k].to(Device::cpu()), ref[k]));
              }
              verdict = worst <= tolerance ? "ok" : str("FAIL: over the tolerance ", tolerance);
            } catch (const Error& e) {
              verdict = str("FAIL: ", e.what());
            }
          }
          std::cout << std::setw(13) << path << " " << std::setw(10) << std::setprecision(2) << std::scientific << worst
                    << std::defaultfloat << " " << verdict << "\n";
          (verdict == "ok" ? passed : failed)++;
        }
      }
    }
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}

}  // namespace porta::cli
