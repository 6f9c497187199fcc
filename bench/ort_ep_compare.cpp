// porta bench — ONNX Runtime + the porta execution provider (cpu) against plain ONNX Runtime
// (its CPU EP) and porta alone (porta::Session), in one process, on the same inputs.
//
// For each model (a folder with model.onnx and, optionally, inputs.txt naming .npy files, as in
// models/ and the zoo; or a .onnx file): three sessions (a) ORT, (b) ORT + porta EP on cpu,
// registered through ORT's plugin-EP API, (c) porta alone; the same inputs (float inputs random,
// seeded, of the shapes of inputs.txt's files or of the model's declared shapes with dynamic
// dimensions 1; integer and bool inputs from inputs.txt's files, else zeros); their outputs
// compared (max|x - ORT| / max|ORT| per output, against --tol); then the three timed
// alternately: after --warmup untimed runs of each, --rounds rounds, each running --runs timed
// runs of every session in turn (the order rotates by round). Per model it prints the medians
// (µs per run, over every timed run), the ratios, and one machine-readable line:
//   RESULT model=<name> threads=T ort_us=.. ep_us=.. porta_us=.. ep_ort=.. porta_ort=.. ep_porta=.. agree=1|0 max_rel=..
//
// With --boundary it first times a one-node model (Relu on --boundary-elems floats) the same way
// and prints the cost of the EP boundary per call:
//   BOUNDARY threads=T elems=N ort_us=.. ep_us=.. porta_us=.. ep_minus_ort_us=.. ep_minus_porta_us=.. porta_minus_ort_us=..
//
// Threads: --threads T sets ORT's intra-op thread count (both ORT sessions) and
// OMP_NUM_THREADS=T, porta's only thread setting (read by OpenMP when the process starts, so the
// program re-executes itself once with it set when it differs).
//
// Usage: porta_ort_ep_compare [--threads T] [--runs N] [--rounds R] [--warmup W] [--tol X]
//                             [--plugin libporta_ort.so] [--boundary] [--boundary-elems N]
//                             [--seed S] [--ep-option KEY=VALUE] [--ort-config KEY=VALUE]
//                             MODEL_DIR_OR_ONNX ...
// --ep-option: a provider option of the porta EP (docs/ORT.md: device is cpu here, strict,
// profiling); --ort-config: a session config entry of both ORT sessions
// (e.g. session.intra_op.allow_spinning=0). Each may repeat.
// Exit status: 0 when every model ran and agreed, 1 when one disagreed or failed, 2 on bad usage.
#include <onnxruntime_cxx_api.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "porta/npy.hpp"
#include "porta/porta.hpp"
#include "tests/onnx_graph_builder.hpp"

namespace {

using porta::DType;
using porta::Shape;
using porta::Tensor;

struct Options {
  int threads = 1, runs = 20, rounds = 3, warmup = 3;
  double tol = 1e-4;
  std::string plugin = PORTA_ORT_PLUGIN;
  bool boundary = false;
  int64_t boundary_elems = 8;
  unsigned seed = 1;
  std::map<std::string, std::string> ep_options;   ///< --ep-option k=v: the porta EP's provider options
  std::map<std::string, std::string> ort_config;   ///< --ort-config k=v: session config entries of both ORT sessions
  std::vector<std::string> models;
};

ONNXTensorElementDataType ort_type(DType t) {
  switch (t) {
    case DType::f32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    case DType::f16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
    case DType::bf16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
    case DType::f64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
    case DType::i64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    case DType::i32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
    case DType::i8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
    case DType::u8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    case DType::boolean: return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
  }
  throw std::runtime_error("unknown dtype");
}

DType porta_type(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return DType::f32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return DType::f16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return DType::bf16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return DType::f64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return DType::i64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return DType::i32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return DType::i8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return DType::u8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return DType::boolean;
    default: throw std::runtime_error("ORT output of an element type porta has no dtype for");
  }
}

Ort::Env& env() {
  static Ort::Env e(ORT_LOGGING_LEVEL_WARNING, "porta_ort_ep_compare");
  return e;
}

/// The porta EP's cpu device, registering the plugin library with the Env on first use.
Ort::ConstEpDevice porta_cpu_device(const std::string& plugin) {
  static bool registered = [&] {
    env().RegisterExecutionProviderLibrary("porta", plugin.c_str());
    return true;
  }();
  (void)registered;
  for (Ort::ConstEpDevice d : env().GetEpDevices()) {
    if (std::string(d.EpName()) != "porta") continue;
    const char* name = d.EpMetadata().GetValue("porta.device");
    if (name && std::string(name) == "cpu") return d;
  }
  throw std::runtime_error("the porta EP offers no cpu device");
}

Ort::SessionOptions ort_options(const Options& o, bool with_porta, bool custom_ops) {
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(o.threads);
  for (auto& [k, v] : o.ort_config) so.AddConfigEntry(k.c_str(), v.c_str());
  // The custom-op library gives plain ORT the ai.porta ops; the EP brings them itself.
  if (custom_ops && !with_porta) so.RegisterCustomOpsLibrary(o.plugin.c_str());
  if (with_porta)
    so.AppendExecutionProvider_V2(env(), {porta_cpu_device(o.plugin)},
                                  std::unordered_map<std::string, std::string>(o.ep_options.begin(), o.ep_options.end()));
  return so;
}

/// An ORT session with its inputs wrapped once (ORT reads them in place) and its output names.
struct OrtRunner {
  Ort::Session session;
  std::vector<std::string> in_names, out_names;
  std::vector<const char*> in_ptrs, out_ptrs;
  std::vector<Ort::Value> in_values;

  OrtRunner(Ort::Session s, const std::vector<std::pair<std::string, Tensor>>& inputs) : session(std::move(s)) {
    Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    for (auto& [name, t] : inputs) {
      in_names.push_back(name);
      in_values.push_back(Ort::Value::CreateTensor(mem, t.raw_data(), t.nbytes(), t.shape().data(), t.shape().size(),
                                                   ort_type(t.dtype())));
    }
    Ort::AllocatorWithDefaultOptions alloc;
    for (size_t i = 0; i < session.GetOutputCount(); ++i)
      out_names.push_back(session.GetOutputNameAllocated(i, alloc).get());
    for (auto& n : in_names) in_ptrs.push_back(n.c_str());
    for (auto& n : out_names) out_ptrs.push_back(n.c_str());
  }
  std::vector<Ort::Value> run() {
    return session.Run(Ort::RunOptions{nullptr}, in_ptrs.data(), in_values.data(), in_values.size(), out_ptrs.data(),
                       out_ptrs.size());
  }
  std::vector<Tensor> outputs() {
    std::vector<Tensor> result;
    for (Ort::Value& v : run()) {
      auto info = v.GetTensorTypeAndShapeInfo();
      result.push_back(Tensor::from_host(v.GetTensorRawData(), info.GetShape(), porta_type(info.GetElementType())));
    }
    return result;
  }
};

/// Largest |a - b| over the largest |b| (the zoo's measure), both cast to f64 on the host.
double rel_error(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  Tensor x = a.to(porta::Device::cpu()).contiguous().cast(DType::f64);
  Tensor y = b.to(porta::Device::cpu()).contiguous().cast(DType::f64);
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    double u = x.data<double>()[i], v = y.data<double>()[i];
    if (std::isnan(u) != std::isnan(v)) return INFINITY;
    if (std::isnan(u)) continue;
    diff = std::max(diff, std::fabs(u - v));
    scale = std::max(scale, std::fabs(v));
  }
  return scale > 0 ? diff / scale : diff;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

/// The inputs of a model: float ones random (uniform in [-1, 1)), the rest from inputs.txt's
/// files (token ids, masks), or zeros when the model has no inputs.txt.
std::vector<std::pair<std::string, Tensor>> make_inputs(const std::filesystem::path& dir, const porta::Model& model,
                                                        std::mt19937& rng) {
  std::map<std::string, Tensor> files;
  std::ifstream list(dir / "inputs.txt");
  for (std::string name, file; list >> name >> file;) files.emplace(name, porta::read_npy((dir / file).string()));
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::pair<std::string, Tensor>> out;
  for (const porta::ValueDesc& in : model.inputs()) {
    auto it = files.find(in.name);
    Shape shape = in.shape;
    for (int64_t& d : shape)
      if (d < 0) d = 1;
    if (it != files.end()) shape = it->second.shape();
    if (it != files.end() && it->second.dtype() != DType::f32) {
      out.push_back({in.name, it->second.contiguous()});
    } else if (in.dtype == DType::f32) {
      Tensor t = Tensor::empty(shape, DType::f32);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
      out.push_back({in.name, t});
    } else {
      out.push_back({in.name, Tensor::zeros(shape, in.dtype)});
    }
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Times the runners alternately: `warmup` untimed calls of each, then `rounds` rounds of
/// `runs` timed calls of each, the order rotating by round. Returns every call's µs per runner.
std::vector<std::vector<double>> time_alternately(const std::vector<std::function<void()>>& runners, const Options& o,
                                                  int runs) {
  for (const auto& r : runners)
    for (int i = 0; i < o.warmup; ++i) r();
  std::vector<std::vector<double>> us(runners.size());
  for (int round = 0; round < o.rounds; ++round)
    for (size_t k = 0; k < runners.size(); ++k) {
      size_t j = (k + round) % runners.size();
      for (int i = 0; i < runs; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        runners[j]();
        us[j].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
    }
  return us;
}

std::string fmt(double v, int precision = 1) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

bool bench_model(const std::string& arg, const Options& o) {
  std::filesystem::path p(arg);
  std::filesystem::path dir = std::filesystem::is_directory(p) ? p : p.parent_path();
  std::filesystem::path file = std::filesystem::is_directory(p) ? p / "model.onnx" : p;
  std::string name = std::filesystem::is_directory(p) ? p.filename().string() : p.stem().string();
  if (name.empty()) name = p.parent_path().filename().string();
  std::cout << "== " << name << " (" << file.string() << ")\n";
  try {
    porta::Model model = porta::Model::load(file.string());
    bool custom_ops = false;  // a model with non-ONNX domains needs porta's custom ops in plain ORT
    std::ifstream bytes(file, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(bytes)), std::istreambuf_iterator<char>());
    custom_ops = text.find("ai.porta") != std::string::npos;
    std::mt19937 rng(o.seed);
    std::vector<std::pair<std::string, Tensor>> inputs = make_inputs(dir, model, rng);
    for (auto& [n, t] : inputs) std::cout << "  input " << n << " " << shape_str(t.shape()) << "\n";

    OrtRunner ort(Ort::Session(env(), file.c_str(), ort_options(o, false, custom_ops)), inputs);
    OrtRunner ep(Ort::Session(env(), file.c_str(), ort_options(o, true, custom_ops)), inputs);
    porta::Session session(model, {.device = porta::Device::cpu()});
    std::map<std::string, Tensor> porta_inputs(inputs.begin(), inputs.end());

    std::vector<Tensor> want = ort.outputs(), got_ep = ep.outputs(), got_porta = session.run(porta_inputs);
    double max_rel = 0;
    bool agree = got_ep.size() == want.size() && got_porta.size() == want.size();
    if (!agree)
      std::cout << "  MISMATCH: output counts ORT " << want.size() << ", EP " << got_ep.size() << ", porta "
                << got_porta.size() << "\n";
    for (size_t i = 0; agree && i < want.size(); ++i) {
      double e_ep = rel_error(got_ep[i], want[i]), e_porta = rel_error(got_porta[i], want[i]);
      max_rel = std::max({max_rel, e_ep, e_porta});
      bool ok = e_ep <= o.tol && e_porta <= o.tol;
      if (!ok) {
        agree = false;
        std::cout << "  MISMATCH: output " << ort.out_names[i] << " " << shape_str(want[i].shape())
                  << ": EP rel err " << e_ep << " (shape " << shape_str(got_ep[i].shape()) << "), porta rel err "
                  << e_porta << " (shape " << shape_str(got_porta[i].shape()) << "), tolerance " << o.tol << "\n";
      }
    }
    std::cout << "  agreement: " << (agree ? "ok" : "FAILED") << ", " << want.size()
              << " output(s), max rel err vs ORT " << max_rel << " (tolerance " << o.tol << ")\n";

    std::vector<std::vector<double>> us = time_alternately(
        {[&] { ort.run(); }, [&] { ep.run(); }, [&] { session.run(porta_inputs); }}, o, o.runs);
    double t_ort = median(us[0]), t_ep = median(us[1]), t_porta = median(us[2]);
    std::cout << "  median µs per run (" << o.rounds << " round(s) of " << o.runs << ", " << o.threads
              << " thread(s)): ORT " << fmt(t_ort) << ", ORT+porta EP " << fmt(t_ep) << ", porta " << fmt(t_porta)
              << "\n  EP/ORT " << fmt(t_ep / t_ort, 2) << ", porta/ORT " << fmt(t_porta / t_ort, 2) << ", EP/porta "
              << fmt(t_ep / t_porta, 2) << "\n";
    std::cout << "RESULT model=" << name << " threads=" << o.threads << " ort_us=" << fmt(t_ort)
              << " ep_us=" << fmt(t_ep) << " porta_us=" << fmt(t_porta) << " ep_ort=" << fmt(t_ep / t_ort, 3)
              << " porta_ort=" << fmt(t_porta / t_ort, 3) << " ep_porta=" << fmt(t_ep / t_porta, 3)
              << " agree=" << (agree ? 1 : 0) << " max_rel=" << max_rel << std::endl;
    return agree;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    std::cout << "  FAILED: " << msg << "\nRESULT model=" << name << " threads=" << o.threads << " error=\"" << msg
              << "\"" << std::endl;
    return false;
  }
}

/// The EP boundary: a one-node Relu model on `elems` floats through the three runners.
bool bench_boundary(const Options& o) {
  porta::test::OnnxGraph g(17, {1, o.boundary_elems});
  g.input("X");
  g.node("Relu", {"X"}, "Y");
  g.output("Y");
  std::string bytes = g.m.SerializeAsString();
  std::mt19937 rng(o.seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor x = Tensor::empty({1, o.boundary_elems}, DType::f32);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  std::vector<std::pair<std::string, Tensor>> inputs{{"X", x}};
  OrtRunner ort(Ort::Session(env(), bytes.data(), bytes.size(), ort_options(o, false, false)), inputs);
  OrtRunner ep(Ort::Session(env(), bytes.data(), bytes.size(), ort_options(o, true, false)), inputs);
  porta::Model model = porta::Model::from_bytes(bytes.data(), bytes.size());
  porta::Session session(model, {.device = porta::Device::cpu()});
  std::map<std::string, Tensor> porta_inputs(inputs.begin(), inputs.end());
  double e_ep = rel_error(ep.outputs().at(0), ort.outputs().at(0));
  double e_porta = rel_error(session.run(porta_inputs).at(0), ort.outputs().at(0));
  bool agree = e_ep <= o.tol && e_porta <= o.tol;
  // Many short calls: 50x the model's runs per round, at least 200.
  int runs = std::max(200, 50 * o.runs);
  std::vector<std::vector<double>> us =
      time_alternately({[&] { ort.run(); }, [&] { ep.run(); }, [&] { session.run(porta_inputs); }}, o, runs);
  double t_ort = median(us[0]), t_ep = median(us[1]), t_porta = median(us[2]);
  std::cout << "== EP boundary: one Relu on " << o.boundary_elems << " floats, " << o.rounds << " round(s) of " << runs
            << " calls, " << o.threads << " thread(s); agreement: " << (agree ? "ok" : "FAILED") << "\n"
            << "  median µs per call: ORT " << fmt(t_ort, 2) << ", ORT+porta EP " << fmt(t_ep, 2) << ", porta "
            << fmt(t_porta, 2) << "\n  EP - ORT " << fmt(t_ep - t_ort, 2) << " µs, EP - porta " << fmt(t_ep - t_porta, 2)
            << " µs, porta - ORT " << fmt(t_porta - t_ort, 2) << " µs\n";
  std::cout << "BOUNDARY threads=" << o.threads << " elems=" << o.boundary_elems << " ort_us=" << fmt(t_ort, 2)
            << " ep_us=" << fmt(t_ep, 2) << " porta_us=" << fmt(t_porta, 2) << " ep_minus_ort_us=" << fmt(t_ep - t_ort, 2)
            << " ep_minus_porta_us=" << fmt(t_ep - t_porta, 2) << " porta_minus_ort_us=" << fmt(t_porta - t_ort, 2)
            << " agree=" << (agree ? 1 : 0) << std::endl;
  return agree;
}

int positive(const std::string& flag, const char* v, int min = 1) {
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (!*v || *end || n < min || n > 1000000) {
    std::cerr << flag << " takes an integer >= " << min << ", got '" << v << "'\n";
    std::exit(2);
  }
  return static_cast<int>(n);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") o.threads = positive(a, value());
    else if (a == "--runs") o.runs = positive(a, value());
    else if (a == "--rounds") o.rounds = positive(a, value());
    else if (a == "--warmup") o.warmup = positive(a, value(), 0);
    else if (a == "--tol") o.tol = std::atof(value());
    else if (a == "--plugin") o.plugin = value();
    else if (a == "--boundary") o.boundary = true;
    else if (a == "--boundary-elems") o.boundary_elems = positive(a, value());
    else if (a == "--ep-option" || a == "--ort-config") {
      std::string kv = value();
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << a << " takes key=value, got '" << kv << "'\n";
        return 2;
      }
      (a == "--ep-option" ? o.ep_options : o.ort_config)[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else if (a == "--seed") o.seed = static_cast<unsigned>(positive(a, value(), 0));
    else if (a == "-h" || a == "--help") {
      std::cout << "usage: porta_ort_ep_compare [--threads T] [--runs N] [--rounds R] [--warmup W] [--tol X]\n"
                   "       [--plugin libporta_ort.so] [--boundary] [--boundary-elems N] [--seed S]\n"
                   "       [--ep-option KEY=VALUE] [--ort-config KEY=VALUE] MODEL ...\n";
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "unknown option " << a << "\n";
      return 2;
    } else o.models.push_back(a);
  }
  if (o.models.empty() && !o.boundary) {
    std::cerr << "no model given (and no --boundary)\n";
    return 2;
  }
  // porta's thread count is OMP_NUM_THREADS, which OpenMP reads at start-up: re-execute once with it.
  std::string want = std::to_string(o.threads);
  const char* have = std::getenv("OMP_NUM_THREADS");
  if (!have || want != have) {
    setenv("OMP_NUM_THREADS", want.c_str(), 1);
    execv("/proc/self/exe", argv);
    std::cerr << "cannot re-execute with OMP_NUM_THREADS=" << want << "\n";
    return 2;
  }
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  std::cout << "porta_ort_ep_compare: ORT " << Ort::GetVersionString() << ", plugin " << o.plugin
            << "; threads " << o.threads << " (ORT intra-op " << o.threads << ", OMP_NUM_THREADS=" << want
            << ", PORTA_THREAD_POLICY=" << (std::getenv("PORTA_THREAD_POLICY") ? std::getenv("PORTA_THREAD_POLICY") : "")
            << "); warmup " << o.warmup << ", " << o.rounds << " round(s) of " << o.runs << " runs; load "
            << fmt(load[0], 2) << " " << fmt(load[1], 2) << " " << fmt(load[2], 2) << " (" << sysconf(_SC_NPROCESSORS_ONLN)
            << " cores)" << std::endl;
  bool ok = true;
  try {
    if (o.boundary) ok = bench_boundary(o) && ok;
  } catch (const std::exception& e) {
    std::cout << "BOUNDARY FAILED: " << e.what() << std::endl;
    ok = false;
  }
  for (const std::string& m : o.models) ok = bench_model(m, o) && ok;
  return ok ? 0 : 1;
}
