// porta_fuzz_ops — randomized cross-backend differential checker of every registered op.
//
// Each iteration draws one call per op from the op's own test cases (tools/fuzz_ops/draw.hpp:
// mutated shapes, attributes mixed across cases, a dtype of the case, fresh inputs), runs
// shape inference, the float64 reference, then the call on every device, and compares each
// result with the reference at the conformance suite's tolerances, outputs NaN-poisoned first.
// A failure prints one command line that replays exactly that call. docs/RELIABILITY.md.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <fstream>
#include <map>
#include <sstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "porta/porta.hpp"
#include "runtime/eager.hpp"
#include "tests/test_util.hpp"
#include "tools/fuzz_ops/draw.hpp"
#ifdef PORTA_FUZZ_VULKAN
#include "backends/vulkan/vk_validation.hpp"
#endif

namespace porta::fuzz {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  uint64_t seed = 1;
  double minutes = 0;           // 0: no time bound
  int64_t iterations = -1;      // rounds over the ops; -1: none given
  int64_t only_iteration = -1;  // replay one iteration
  int64_t start = 0;
  std::vector<std::string> devices;
  std::vector<std::string> ops;
  std::vector<std::string> exclude_ops;
  DrawLimits limits;
  double max_flops = 2e8;
  int max_reports = 5;  // failures printed in full per op and device
  double call_timeout_s = 300;
  bool verbose = false;
  bool list = false;
  bool no_fork = false;
  std::string argv0 = "porta_fuzz_ops";
};

const int64_t kDefaultMaxElements = int64_t{1} << 22;
const double kDefaultMaxFlops = 2e8;

void usage() {
  std::cout <<
      "usage: porta_fuzz_ops [--seed N] [--minutes M | --iterations N | --iteration K]\n"
      "                      [--device D]... [--op NAME]... [--exclude-op NAME]...\n"
      "                      [--max-elements N] [--max-flops F]\n"
      "                      [--start K] [--max-reports N] [--call-timeout S] [--no-fork] [-v] [--list]\n"
      "  Draws calls of every registered op from its test cases (shapes mutated, attributes\n"
      "  mixed across cases, a dtype of the case, random inputs), runs each on every device and\n"
      "  compares with the float64 reference. An iteration is one call per op; call K of op X\n"
      "  depends only on (seed, X, K): '--op X --iteration K' replays it. Default: --iterations 10\n"
      "  on every available device but emulated ones (gpu_emu: name them with --device). Exit\n"
      "  status 1 on any mismatch or error, 2 on bad usage.\n"
      "  A run works in child processes: a crash or a hang (one call over --call-timeout) is\n"
      "  reported with its reproducer and the run goes on after it (--no-fork: in-process).\n";
}

Options parse(int argc, char** argv) {
  Options o;
  o.argv0 = argv[0];
  auto split = [](const std::string& s, std::vector<std::string>& into) {
    size_t p = 0;
    while (p <= s.size()) {
      size_t q = s.find(',', p);
      if (q == std::string::npos) q = s.size();
      if (q > p) into.push_back(s.substr(p, q - p));
      p = q + 1;
    }
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InvalidArgument(str(a, " needs a value"));
      return argv[++i];
    };
    auto number = [&](const std::string& v) {
      char* end = nullptr;
      double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !std::isfinite(x) || x < 0) throw InvalidArgument(str(a, ": not a number: '", v, "'"));
      return x;
    };
    if (a == "--seed") o.seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--minutes") o.minutes = number(value());
    else if (a == "--iterations") o.iterations = static_cast<int64_t>(number(value()));
    else if (a == "--iteration") o.only_iteration = static_cast<int64_t>(number(value()));
    else if (a == "--start") o.start = static_cast<int64_t>(number(value()));
    else if (a == "--device") split(value(), o.devices);
    else if (a == "--op") split(value(), o.ops);
    else if (a == "--exclude-op") split(value(), o.exclude_ops);
    else if (a == "--max-elements") o.limits.max_elements = static_cast<int64_t>(number(value()));
    else if (a == "--max-flops") o.max_flops = number(value());
    else if (a == "--max-reports") o.max_reports = static_cast<int>(number(value()));
    else if (a == "--call-timeout") o.call_timeout_s = number(value());
    else if (a == "-v" || a == "--verbose") o.verbose = true;
    else if (a == "--list") o.list = true;
    else if (a == "--no-fork") o.no_fork = true;
    else if (a == "-h" || a == "--help") {
      usage();
      std::exit(0);
    } else {
      throw InvalidArgument(str("unknown argument '", a, "'"));
    }
  }
  return o;
}

// ---- crash and hang reporting ------------------------------------------------------------

// What is running, for the crash and hang reports: "<op> #<it> on <device>" and the line
// that replays it.
char g_what[512] = "";
char g_current[2048] = "";
std::atomic<int64_t> g_call_started_ms{0};

void write_str(const char* s) {
  ssize_t ignored = write(1, s, strlen(s));
  (void)ignored;
}

void on_signal(int sig) {
  char num[16];
  snprintf(num, sizeof num, "%d", sig);
  write_str("CRASH (signal ");
  write_str(num);
  write_str(") ");
  write_str(g_what);
  write_str("\n  reproduce: ");
  write_str(g_current);
  write_str("\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

void set_current(const std::string& what, const std::string& repro) {
  std::snprintf(g_what, sizeof g_what, "%s", what.c_str());
  std::snprintf(g_current, sizeof g_current, "%s", repro.c_str());
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}

void start_watchdog(double timeout_s) {
  std::thread([timeout_s] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      int64_t t0 = g_call_started_ms.load();
      if (t0 && now_ms() - t0 > timeout_s * 1000) {
        std::fflush(stdout);
        std::printf("HANG (one call over %.0f s) %s\n  reproduce: %s\n", timeout_s, g_what, g_current);
        std::fflush(stdout);
        _exit(3);
      }
    }
  }).detach();
}

// ---- statistics --------------------------------------------------------------------------

struct DeviceStats {
  int64_t calls = 0, native = 0, composite = 0, fallback = 0, unsupported = 0;
  int64_t mismatches = 0, errors = 0;
};

struct OpStats {
  int64_t draws = 0, calls = 0, skipped_infer = 0, skipped_reference = 0, too_large = 0;
  int64_t failures = 0;
  std::map<std::string, int64_t> reported;  // per device: failures printed
};

struct Totals {
  int64_t draws = 0, calls = 0, skipped_infer = 0, skipped_reference = 0, too_large = 0;
  int64_t mismatches = 0, errors = 0, crashes = 0;
  std::map<std::string, DeviceStats> devices;
};

/// Everything counted so far; passed from a worker process to the supervisor as text.
struct Stats {
  Totals totals;
  std::map<std::string, OpStats> per_op;

  std::string serialize() const {
    const Totals& t = totals;
    std::string out = str("totals ", t.draws, " ", t.calls, " ", t.skipped_infer, " ", t.skipped_reference, " ",
                          t.too_large, " ", t.mismatches, " ", t.errors, " ", t.crashes, "\n");
    for (const auto& [n, d] : t.devices)
      out += str("dev ", n, " ", d.calls, " ", d.native, " ", d.composite, " ", d.fallback, " ", d.unsupported,
                 " ", d.mismatches, " ", d.errors, "\n");
    for (const auto& [n, o] : per_op) {
      out += str("op ", n, " ", o.draws, " ", o.calls, " ", o.skipped_infer, " ", o.skipped_reference, " ",
                 o.too_large, " ", o.failures, "\n");
      for (const auto& [dev, k] : o.reported) out += str("rep ", n, " ", dev, " ", k, "\n");
    }
    return out;
  }
  void parse_line(std::istringstream& in, const std::string& key) {
    Totals& t = totals;
    if (key == "totals") {
      in >> t.draws >> t.calls >> t.skipped_infer >> t.skipped_reference >> t.too_large >> t.mismatches >>
          t.errors >> t.crashes;
    } else if (key == "dev") {
      std::string n;
      in >> n;
      DeviceStats& d = t.devices[n];
      in >> d.calls >> d.native >> d.composite >> d.fallback >> d.unsupported >> d.mismatches >> d.errors;
    } else if (key == "op") {
      std::string n;
      in >> n;
      OpStats& o = per_op[n];
      in >> o.draws >> o.calls >> o.skipped_infer >> o.skipped_reference >> o.too_large >> o.failures;
    } else if (key == "rep") {
      std::string n, dev;
      in >> n >> dev;
      in >> per_op[n].reported[dev];
    }
  }
};

std::string multi_index(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] > 0) {
      idx[k] = flat % shape[k];
      flat /= shape[k];
    }
  }
  return shape_str(idx);
}

// The element that is furthest from the reference (a NaN/inf disagreement first).
std::string worst_element(const Tensor& got, const Tensor& ref) {
  if (got.shape() != ref.shape()) return "";
  std::vector<double> r = got.to_doubles(), e = ref.to_doubles();
  int64_t worst = -1;
  double worst_diff = -1;
  for (size_t i = 0; i < r.size(); ++i) {
    bool special = std::isnan(r[i]) != std::isnan(e[i]) ||
                   ((std::isinf(r[i]) || std::isinf(e[i])) && r[i] != e[i]);
    if (std::isnan(r[i]) && std::isnan(e[i])) continue;
    double d = special ? INFINITY : std::abs(r[i] - e[i]);
    if (d > worst_diff) worst_diff = d, worst = static_cast<int64_t>(i);
    if (special) break;
  }
  if (worst < 0) return "";
  return str("worst element ", multi_index(ref.shape(), worst), ": got ", r[worst], ", reference ",
             e[worst]);
}

class Runner {
 public:
  Runner(Options o, std::vector<Device> devices, Stats stats)
      : o_(std::move(o)), devices_(std::move(devices)), s_(std::move(stats)) {
    for (Device d : devices_) s_.totals.devices[d.str()];
  }
  const Stats& stats() const { return s_; }

  void run_iteration(const OpSchema& op, const std::vector<OpCase>& cases, int64_t it);

 private:
  std::string repro(const OpSchema& op, int64_t it, const std::string& device) const {
    std::string s = str(o_.argv0, " --seed ", o_.seed, " --op ", op.name, " --iteration ", it);
    if (!device.empty()) s += " --device " + device;
    if (o_.limits.max_elements != kDefaultMaxElements) s += str(" --max-elements ", o_.limits.max_elements);
    if (o_.max_flops != kDefaultMaxFlops) s += str(" --max-flops ", o_.max_flops);
    return s;
  }
  void fail(const OpSchema& op, int64_t it, const Draw& d, const std::string& device,
            const std::string& path, bool mismatch, const std::string& what);

  Options o_;
  std::vector<Device> devices_;
  Stats s_;
};

void Runner::fail(const OpSchema& op, int64_t it, const Draw& d, const std::string& device,
                  const std::string& path, bool mismatch, const std::string& what) {
  OpStats& s = s_.per_op[op.name];
  ++s.failures;
  (mismatch ? s_.totals.mismatches : s_.totals.errors)++;
  if (s_.totals.devices.count(device)) (mismatch ? s_.totals.devices[device].mismatches : s_.totals.devices[device].errors)++;
  int64_t& shown = s.reported[device];
  if (shown++ >= o_.max_reports) {
    if (shown == o_.max_reports + 1)
      std::cout << "(" << op.name << " on " << device << ": further failures counted, not printed)\n";
    return;
  }
  std::cout << (mismatch ? "MISMATCH " : "ERROR ") << op.name << " #" << it << " on " << device
            << (path.empty() ? "" : " (" + path + ")") << ": " << dtype_name(d.dtype) << ", case '"
            << d.case_name << "', inputs " << describe_inputs(d) << ", attrs {" << d.attrs.str()
            << "}, " << d.mutation << " -> " << what << "\n"
            << "  reproduce: " << repro(op, it, device) << std::endl;
}

void Runner::run_iteration(const OpSchema& op, const std::vector<OpCase>& cases, int64_t it) {
  OpStats& st = s_.per_op[op.name];
  ++st.draws;
  ++s_.totals.draws;
  Draw d = draw_call(op, cases, o_.seed, static_cast<uint64_t>(it), o_.limits);
  set_current(str(op.name, " #", it, " while drawing inputs"), repro(op, it, ""));
  if (o_.verbose)
    std::cout << op.name << " #" << it << ": " << dtype_name(d.dtype) << ", case '" << d.case_name
              << "', inputs " << describe_inputs(d) << ", attrs {" << d.attrs.str() << "}, "
              << d.mutation << std::endl;

  for (const InputSpec& s : d.inputs)
    if (!s.absent && shape_numel(s.shape) > o_.limits.max_elements) {
      ++st.too_large;
      ++s_.totals.too_large;
      if (o_.verbose) std::cout << "  too large (an input over --max-elements)\n";
      return;
    }
  test::rng().seed(d.data_seed);
  std::vector<Tensor> host;
  for (const InputSpec& s : d.inputs) host.push_back(s.absent ? Tensor() : test::make_input(s, d.dtype));

  set_current(str(op.name, " #", it, " in shape inference"), repro(op, it, ""));
  // Shape inference, as the dispatcher runs it (host values of shape-deciding inputs attached).
  Attributes attrs;
  std::vector<ValueInfo> infos(host.size()), out_infos;
  try {
    attrs = complete_attributes(op, d.attrs, "");
    for (size_t i = 0; i < host.size(); ++i) {
      infos[i].present = host[i].defined();
      if (!infos[i].present) continue;
      infos[i].shape = host[i].shape();
      infos[i].dtype = host[i].dtype();
      for (int h : op.host_inputs)
        if (h == static_cast<int>(i)) infos[i].value = &host[i];
    }
    out_infos = detail::infer_outputs(op, attrs, infos, d.num_outputs, "");
  } catch (const Error& e) {
    ++st.skipped_infer;
    ++s_.totals.skipped_infer;
    if (o_.verbose) std::cout << "  inference rejects it: " << e.what() << "\n";
    return;
  } catch (const std::exception& e) {
    fail(op, it, d, "inference", "", false, str("shape inference threw a non-porta exception: ", e.what()));
    return;
  }
  double flops = 0;
  bool large = false;
  for (const ValueInfo& v : out_infos) large |= shape_numel(v.shape) > o_.limits.max_elements;
  if (!large && op.flops) {
    std::vector<Shape> in_shapes, out_shapes;
    for (auto& v : infos) in_shapes.push_back(v.present ? v.shape : Shape{});
    for (auto& v : out_infos) out_shapes.push_back(v.shape);
    try {
      flops = op.flops(in_shapes, out_shapes, attrs);
    } catch (const std::exception&) {
    }
    large = flops > o_.max_flops;
  }
  if (large) {
    ++st.too_large;
    ++s_.totals.too_large;
    if (o_.verbose) std::cout << "  too large (outputs over --max-elements or over --max-flops)\n";
    return;
  }

  std::vector<DType> out_dtypes;
  std::vector<Tensor> ref;
  set_current(str(op.name, " #", it, " in the float64 reference"), repro(op, it, ""));
  g_call_started_ms = now_ms();
  try {
    ref = reference_op(op.qualified_name(), host, d.attrs, d.num_outputs, &out_dtypes);
    g_call_started_ms = 0;
  } catch (const Error& e) {
    g_call_started_ms = 0;
    ++st.skipped_reference;
    ++s_.totals.skipped_reference;
    if (o_.verbose) std::cout << "  the reference rejects it: " << e.what() << "\n";
    return;
  } catch (const std::exception& e) {
    g_call_started_ms = 0;
    fail(op, it, d, "reference", "", false, str("the reference threw a non-porta exception: ", e.what()));
    return;
  }

  for (Device dev : devices_) {
    // An eager call without inputs runs on the cpu whatever the device (as in the conformance suite).
    bool any_input = false;
    for (auto& t : host) any_input |= t.defined();
    if (!any_input && dev.type != DeviceType::cpu) continue;
    std::string dname = dev.str();
    DeviceStats& ds = s_.totals.devices[dname];
    std::string path;
    set_current(str(op.name, " #", it, " on ", dname), repro(op, it, dname));
    g_call_started_ms = now_ms();
    try {
      std::vector<Tensor> ins;
      for (auto& t : host) ins.push_back(t.defined() ? t.to(dev) : Tensor());
      if (d.strided_first && host[0].defined() && host[0].rank() >= 1 && host[0].numel() >= 2) {
        // Input 0 as a view with stride 2 along its last axis, over a buffer twice as wide.
        Shape wide = host[0].shape();
        wide.back() *= 2;
        Tensor buf = Tensor::zeros(wide, host[0].dtype(), dev);
        Tensor view = buf.slice(-1, 0, wide.back(), 2);
        view.copy_(host[0]);
        ins[0] = view;
      }
      // Which path the dispatcher takes (the same resolution call_op makes).
      KernelContext ctx;
      ctx.op = &op;
      ctx.attrs = &attrs;
      ctx.device = dev;
      ctx.backend = &backend_for(dev);
      ctx.inputs = ins;
      DType dt = detail::dispatch_dtype(op, infos, out_infos);
      Resolution r = resolve(op, dev, dt);
      if (r.path == Path::native || r.path == Path::fallback) r = resolve_call(ctx, dt);
      path = std::string(path_name(r.path));
      ++ds.calls;
      ++st.calls;
      ++s_.totals.calls;
      switch (r.path) {
        case Path::native: ++ds.native; break;
        case Path::composite: ++ds.composite; break;
        case Path::fallback: ++ds.fallback; break;
        default: ++ds.unsupported; break;
      }
      detail::set_poison_outputs(true);
      std::vector<Tensor> got;
      try {
        got = call_op(op.qualified_name(), ins, d.attrs, d.num_outputs);
      } catch (...) {
        detail::set_poison_outputs(false);
        throw;
      }
      detail::set_poison_outputs(false);
      std::string problems;
      bool mismatch = false;
      if (got.size() != ref.size()) {
        problems = str(got.size(), " outputs, reference has ", ref.size());
        mismatch = true;
      }
      for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
        if (!ref[i].defined()) continue;
        std::string p;
        if (!got[i].defined()) p = "missing";
        else if (got[i].device() != dev) p = str("on ", got[i].device().str());
        else if (got[i].dtype() != out_dtypes[i]) p = str("dtype ", dtype_name(got[i].dtype()), ", expected ", dtype_name(out_dtypes[i]));
        else {
          double tol = d.tolerance > 0 ? d.tolerance : test::default_tolerance(out_dtypes[i]);
          if (is_floating(out_dtypes[i]) && d.dtype != out_dtypes[i] && is_floating(d.dtype))
            tol = std::max(tol, test::default_tolerance(d.dtype));
          test::Comparison c = test::compare(got[i], ref[i], tol);
          if (!c.ok) p = str(shape_str(ref[i].shape()), ": ", c.message, "; ", worst_element(got[i], ref[i]));
        }
        if (!p.empty()) {
          problems += str(problems.empty() ? "" : "; ", "output ", i, " ", p);
          mismatch = true;
        }
      }
#ifdef PORTA_FUZZ_VULKAN
      if (dev.type == DeviceType::vulkan) {
        std::vector<std::string> v = vk::take_validation_errors();
        if (!v.empty()) {
          problems += str(problems.empty() ? "" : "; ", v.size(), " Vulkan validation error(s), first: ", v[0]);
          mismatch = true;
        }
      }
#endif
      g_call_started_ms = 0;
      if (mismatch) fail(op, it, d, dname, path, true, problems);
    } catch (const Unsupported& e) {
      // A clean refusal: the device (and the cpu fallback) does not take this call.
      g_call_started_ms = 0;
      if (path.empty()) ++ds.calls, ++st.calls, ++s_.totals.calls;  // refused before resolving
      if (path != "unsupported") ++ds.unsupported;
      if (path == "native") --ds.native;
      if (path == "composite") --ds.composite;
      if (path == "fallback") --ds.fallback;
      if (o_.verbose) std::cout << "  " << dname << ": Unsupported: " << e.what() << "\n";
    } catch (const Error& e) {
      g_call_started_ms = 0;
      fail(op, it, d, dname, path, false, str(e.kind(), " (the reference accepted the call): ", e.what()));
    } catch (const std::exception& e) {
      g_call_started_ms = 0;
      fail(op, it, d, dname, path, false, str("non-porta exception: ", e.what()));
    }
  }
}

void summary(const Options& o_, const Stats& s, double seconds, size_t num_ops) {
  const auto& s_ = s;
  // Ops whose draws were mostly refused: the mutations suit them badly (worth knowing).
  std::string mostly_skipped;
  for (const auto& [name, s] : s_.per_op) {
    int64_t skipped = s.skipped_infer + s.skipped_reference + s.too_large;
    if (s.draws >= 4 && skipped * 2 > s.draws)
      mostly_skipped += str(mostly_skipped.empty() ? "" : " ", name, "(", skipped, "/", s.draws, ")");
  }
  if (!mostly_skipped.empty()) std::cout << "ops with most draws skipped: " << mostly_skipped << "\n";
  std::string failing;
  for (const auto& [name, s] : s_.per_op)
    if (s.failures) failing += str(failing.empty() ? "" : " ", name, "(", s.failures, ")");
  if (!failing.empty()) std::cout << "failing ops: " << failing << "\n";
  std::string devs;
  for (const auto& [name, s] : s_.totals.devices)
    devs += str(" | ", name, ": calls=", s.calls, " native=", s.native, " composite=", s.composite,
                " fallback=", s.fallback, " unsupported=", s.unsupported, " mismatches=", s.mismatches,
                " errors=", s.errors);
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f", seconds);
  std::cout << "porta_fuzz_ops summary: seed=" << o_.seed << " ops=" << num_ops << " draws=" << s_.totals.draws
            << " calls=" << s_.totals.calls << " skipped_by_inference=" << s_.totals.skipped_infer
            << " skipped_by_reference=" << s_.totals.skipped_reference << " too_large=" << s_.totals.too_large
            << devs << " | mismatches=" << s_.totals.mismatches << " errors=" << s_.totals.errors
            << " (crashes/hangs " << s_.totals.crashes << ") | " << secs << " s" << std::endl;
}

using Work = std::vector<std::pair<const OpSchema*, std::vector<OpCase>>>;

// Where a worker starts and stops: rounds [round, last), op index `op` within the first one.
struct Span {
  int64_t round = 0, last = 0;
  size_t op = 0;
  Clock::time_point deadline = Clock::time_point::max();
};

void write_checkpoint(const std::string& path, const Span& at, const Stats& stats, bool done) {
  if (path.empty()) return;
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << "at " << at.round << " " << at.op << " " << (done ? 1 : 0) << "\n" << stats.serialize();
  }
  std::rename(tmp.c_str(), path.c_str());
}

bool read_checkpoint(const std::string& path, Span& at, Stats& stats, bool& done) {
  std::ifstream f(path);
  if (!f) return false;
  std::string line;
  Stats st;
  bool any = false;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (key == "at") {
      int d = 0;
      in >> at.round >> at.op >> d;
      done = d != 0;
      any = true;
    } else {
      st.parse_line(in, key);
    }
  }
  if (any) stats = std::move(st);
  return any;
}

// Runs draws from `span` on, checkpointing before each one (when `checkpoint` is set), and
// returns 0, 1 (failures) or 2 (bad device).
int worker(const Options& o, const Work& work, Span span, Stats stats, const std::string& checkpoint,
           bool header, Stats* final_stats = nullptr) {
  std::vector<Device> devices;
  if (o.devices.empty() || (o.devices.size() == 1 && o.devices[0] == "all")) {
    // Emulated devices (gpu_emu) run only when named: a call a GPU takes in microseconds can
    // take minutes there (one fiber per GPU thread).
    for (Device d : all_devices())
      if (test::device_unusable(d).empty() && find_backend(d.type)->capabilities(d.index).type != "emulated")
        devices.push_back(d);
  } else {
    for (const std::string& name : o.devices) {
      Device d;
      try {
        d = Device::parse(name);
      } catch (const Error& e) {
        std::cerr << "porta_fuzz_ops: " << e.what() << "\n";
        return 2;
      }
      std::string why = test::device_unusable(d);
      if (!why.empty()) {
        std::cerr << "porta_fuzz_ops: " << d.str() << " is not usable: " << why << "\n";
        return 2;
      }
      devices.push_back(d);
    }
  }
  if (header) {
    std::string dev_names;
    for (Device d : devices) dev_names += (dev_names.empty() ? "" : ",") + d.str();
    std::cout << "porta_fuzz_ops: seed " << o.seed << ", " << work.size() << " ops, devices " << dev_names
              << ", max " << o.limits.max_elements << " elements per tensor, " << o.max_flops
              << " flops per call" << std::endl;
  }
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(sig, on_signal);
  start_watchdog(o.call_timeout_s);
#ifdef PORTA_FUZZ_VULKAN
  vk::take_validation_errors();
#endif
  Runner runner(o, devices, std::move(stats));
  Span at = span;
  for (; at.round < span.last; ++at.round, at.op = 0) {
    for (; at.op < work.size(); ++at.op) {
      if (Clock::now() >= span.deadline) {
        write_checkpoint(checkpoint, at, runner.stats(), true);
        if (final_stats) *final_stats = runner.stats();
        return 0;
      }
      write_checkpoint(checkpoint, at, runner.stats(), false);
      runner.run_iteration(*work[at.op].first, work[at.op].second, at.round);
    }
  }
  write_checkpoint(checkpoint, at, runner.stats(), true);
  if (final_stats) *final_stats = runner.stats();
  return 0;
}

int run(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const Error& e) {
    std::cerr << "porta_fuzz_ops: " << e.what() << "\n";
    usage();
    return 2;
  }
  // Ops: by name; only those with cases to draw from.
  std::vector<const OpSchema*> ops;
  for (const OpSchema* op : all_ops()) {
    if (!o.ops.empty() && std::find(o.ops.begin(), o.ops.end(), op->name) == o.ops.end()) continue;
    if (std::find(o.exclude_ops.begin(), o.exclude_ops.end(), op->name) != o.exclude_ops.end()) continue;
    ops.push_back(op);
  }
  for (const std::string& name : o.exclude_ops)
    if (!find_op(name)) {
      std::cerr << "porta_fuzz_ops: unknown op '" << name << "'\n";
      return 2;
    }
  for (const std::string& name : o.ops)
    if (!find_op(name)) {
      std::cerr << "porta_fuzz_ops: unknown op '" << name << "'\n";
      return 2;
    }
  std::sort(ops.begin(), ops.end(), [](const OpSchema* a, const OpSchema* b) { return a->name < b->name; });
  Work work;
  std::string without;
  for (const OpSchema* op : ops) {
    std::vector<OpCase> cases = op->cases ? op->cases() : std::vector<OpCase>{};
    if (cases.empty()) {
      without += " " + op->name;
      continue;
    }
    work.emplace_back(op, std::move(cases));
  }
  if (o.list) {
    for (auto& [op, cases] : work) std::cout << op->name << " " << cases.size() << " cases\n";
    if (!without.empty()) std::cout << "without cases:" << without << "\n";
    return 0;
  }
  if (work.empty()) {
    std::cerr << "porta_fuzz_ops: no op with cases selected\n";
    return 2;
  }

  Span span;
  span.round = o.start;
  if (o.only_iteration >= 0) {
    span.round = o.only_iteration;
    span.last = span.round + 1;
    o.verbose = true;
  } else if (o.iterations >= 0) {
    span.last = span.round + o.iterations;
  } else if (o.minutes > 0) {
    span.last = INT64_MAX;
  } else {
    span.last = span.round + 10;
  }
  Clock::time_point t0 = Clock::now();
  if (o.minutes > 0) span.deadline = t0 + std::chrono::milliseconds(static_cast<int64_t>(o.minutes * 60000));
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };

  // A replay runs in this process (a crash shows as it is); a run goes through worker
  // processes, so that a crash or hang is reported and the run goes on after it. The
  // supervisor itself touches no device (a forked Vulkan instance is not usable).
  Stats stats;
  if (o.only_iteration >= 0 || o.no_fork) {
    int rc = worker(o, work, span, Stats{}, "", true, &stats);
    if (rc == 2) return rc;
    summary(o, stats, elapsed(), work.size());
    return stats.totals.mismatches + stats.totals.errors > 0 ? 1 : 0;
  }
  char tmpl[] = "/tmp/porta_fuzz_ops.XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) {
    std::cerr << "porta_fuzz_ops: cannot create a checkpoint file in /tmp\n";
    return 2;
  }
  close(fd);
  std::string checkpoint = tmpl;
  bool header = true;
  int restarts = 0;
  Span at = span;
  for (;;) {
    std::cout.flush();
    pid_t pid = fork();
    if (pid < 0) {
      std::cerr << "porta_fuzz_ops: fork failed\n";
      return 2;
    }
    if (pid == 0) {
      int rc = worker(o, work, at, stats, checkpoint, header);
      std::cout.flush();
      _exit(rc);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    header = false;
    bool done = false;
    Span next = at;
    bool have = read_checkpoint(checkpoint, next, stats, done);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
      std::remove(checkpoint.c_str());
      return 2;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && done) break;
    // A crash or hang during draw `next` (the report is already printed by the worker).
    if (!have) {
      std::cout << "porta_fuzz_ops: the worker died before its first draw (status " << status << ")\n";
      std::remove(checkpoint.c_str());
      return 1;
    }
    ++stats.totals.crashes;
    ++stats.totals.errors;
    ++stats.totals.draws;
    const std::string& name = work[next.op].first->name;
    ++stats.per_op[name].failures;
    ++stats.per_op[name].draws;
    at = next;
    at.deadline = span.deadline;
    at.last = span.last;
    if (++at.op == work.size()) at.op = 0, ++at.round;
    if (at.round >= span.last || Clock::now() >= span.deadline) break;
    if (++restarts > 200) {
      std::cout << "porta_fuzz_ops: over 200 crashes, stopping\n";
      break;
    }
  }
  std::remove(checkpoint.c_str());
  std::remove((checkpoint + ".tmp").c_str());
  summary(o, stats, elapsed(), work.size());
  return stats.totals.mismatches + stats.totals.errors > 0 ? 1 : 0;
}

}  // namespace
}  // namespace porta::fuzz

int main(int argc, char** argv) { return porta::fuzz::run(argc, argv); }
