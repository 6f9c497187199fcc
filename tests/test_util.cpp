#include "tests/test_util.hpp"

#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tests/test_paths.hpp"

namespace porta::test {

uint64_t seed() {
  static uint64_t s = []() -> uint64_t {
    if (const char* e = std::getenv("PORTA_TEST_SEED")) return std::strtoull(e, nullptr, 10);
    return static_cast<uint64_t>(std::random_device{}()) << 32 | std::random_device{}();
  }();
  return s;
}

std::mt19937_64& rng() {
  thread_local std::mt19937_64 r(seed());
  return r;
}

Tensor random_f32(const Shape& shape, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (double& d : v) d = u(rng());
  return Tensor::from_values(v, shape, DType::f32);
}

std::vector<Device> test_devices() {
  // Vulkan devices are created on first use, possibly while tests register at start-up: ask
  // for the validation layer before that, so every test runs validated (tests/vulkan_test.cpp
  // fails the test during which the layer reports an error). PORTA_VULKAN_VALIDATION=0 opts out.
  setenv("PORTA_VULKAN_VALIDATION", "1", 0);
  return all_devices();
}

std::vector<DeviceType> gpu_device_types() {
  std::vector<DeviceType> kinds = {DeviceType::cuda, DeviceType::hip};
  if (std::optional<DeviceType> emu = find_device_type("gpu_emu")) kinds.push_back(*emu);
  return kinds;
}

std::string device_unusable(Device d) {
  Backend* b = find_backend(d.type);
  if (!b) return "backend not built";
  if (d.index >= b->device_count()) return "no such device";
  Availability a = b->availability(d.index);
  return a.available ? "" : a.detail;
}

Tensor make_input(const InputSpec& spec, DType case_dtype) {
  DType dt = spec.dtype.value_or(case_dtype);
  int64_t n = shape_numel(spec.shape);
  std::vector<double> v(static_cast<size_t>(n));
  if (!spec.values.empty()) {
    v = spec.values;
  } else if (spec.integers || !is_floating(dt)) {
    double lo = spec.lo, hi = spec.hi;
    if (dt == DType::boolean) lo = 0, hi = 1;
    if (dt == DType::u8) lo = std::max(lo, 0.0);
    std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(std::ceil(lo)),
                                             static_cast<int64_t>(std::floor(hi)));
    for (auto& x : v) x = static_cast<double>(d(rng()));
  } else {
    std::uniform_real_distribution<double> d(spec.lo, spec.hi);
    for (auto& x : v) x = d(rng());
  }
  Tensor t = Tensor::from_values(v, spec.shape, dt);
  if (spec.transposed && t.rank() >= 2) {
    // Same logical values, stored transposed: a non-contiguous view.
    Tensor stored = t.transpose(-1, -2).contiguous();
    t = stored.transpose(-1, -2);
  }
  return t;
}

double default_tolerance(DType t) {
  switch (t) {
    case DType::f64: return 1e-10;
    case DType::f32: return 2e-5;
    case DType::f16: return 2e-3;
    case DType::bf16: return 1.6e-2;
    default: return 0.0;
  }
}

Comparison compare(const Tensor& result, const Tensor& reference, double tolerance) {
  Comparison c;
  if (result.shape() != reference.shape()) {
    c.ok = false;
    c.message = str("shape ", shape_str(result.shape()), " != reference ", shape_str(reference.shape()));
    return c;
  }
  std::vector<double> r = result.to_doubles(), e = reference.to_doubles();
  double diff2 = 0, ref2 = 0;
  int64_t first_bad = -1;
  for (size_t i = 0; i < r.size(); ++i) {
    bool rn = std::isnan(r[i]), en = std::isnan(e[i]);
    if (rn || en) {
      if (rn != en && first_bad < 0) first_bad = static_cast<int64_t>(i);
      continue;
    }
    if (std::isinf(e[i]) || std::isinf(r[i])) {
      if (r[i] != e[i] && first_bad < 0) first_bad = static_cast<int64_t>(i);
      continue;
    }
    double d = r[i] - e[i];
    c.max_abs = std::max(c.max_abs, std::abs(d));
    diff2 += d * d;
    ref2 += e[i] * e[i];
    if (tolerance == 0.0 && d != 0.0 && first_bad < 0) first_bad = static_cast<int64_t>(i);
  }
  c.rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (first_bad >= 0) {
    c.ok = false;
    c.message = str("element ", first_bad, ": got ", r[first_bad], ", reference ", e[first_bad]);
  } else if (tolerance > 0 && c.rel > tolerance && c.max_abs > tolerance) {
    // Norm-wise relative error, with an absolute floor of the same size: a result whose
    // reference is near zero (log(1 + tiny)) is judged by its absolute error.
    c.ok = false;
    c.message = str("relative error ", c.rel, " > tolerance ", tolerance, " (max abs ", c.max_abs, ")");
  }
  return c;
}

#ifdef PORTA_TESTS_BINARY  // the test binary's build (fuzz tools share this file without it)
CliResult porta_cli(const std::string& args, const std::string& env) {
  std::string cmd = env + " " + PORTA_BINARY_DIR + "/bin/porta " + args + " 2>&1";
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}
#endif

}  // namespace porta::test
