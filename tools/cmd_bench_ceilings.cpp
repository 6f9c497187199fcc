// porta bench — each device's ceilings, measured once and kept in the user's cache directory,
// keyed by the device's name. Both come from outside porta's op kernels: memory bandwidth from
// the backend's own copy (memcpy on every core, vkCmdCopyBuffer, cudaMemcpy device to device),
// compute from the backend's fma-chain probe per dtype (Backend::measure_fma_gflops).
//
// File: {"schema_version": 2, "devices": {"<device name>": {"device": "cpu", "copy_gbps": 24.1,
//        "fma_gflops": {"f32": 301.2}, "measured_at": "2025-01-01T12:00:00Z"}, ...}}
// An entry without "fma_gflops" (schema 1 stored porta's MatMul as "matmul_gflops") is
// measured again.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/bench_call.hpp"
#include "runtime/bench_json.hpp"
#include "tools/cmd_bench.hpp"

namespace fs = std::filesystem;

namespace porta::cli::bench {
namespace {

using porta::bench::Json;
using porta::bench::json_number;
using porta::bench::json_quote;

constexpr size_t kCopyBytes = size_t{256} << 20;

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string device_name(Device d) {
  Capabilities c = backend_for(d).capabilities(d.index);
  return c.name.empty() ? d.str() : c.name;
}

Settings calibration_settings() {
  Settings s;
  s.warmup_runs = 1;
  s.min_runs = 5;
  s.min_time_s = 1.0;  // the fastest of many runs: a loaded machine slows some of them
  s.max_case_s = 2.0;
  return s;
}

// Device memory copy, read + write bytes per second. On the cpu every core copies its share,
// as the multithreaded kernels it is compared with do.
double measure_copy_gbps(Device d) {
  Backend& b = backend_for(d);
  Capabilities caps = b.capabilities(d.index);
  size_t bytes = std::min(kCopyBytes, caps.max_buffer_bytes);
  if (caps.total_memory) bytes = std::min(bytes, caps.total_memory / 8);
  bytes &= ~size_t{4095};
  void* src = b.allocate(d.index, bytes);
  void* dst = b.allocate(d.index, bytes);
  std::function<void()> copy;
  char* hs = static_cast<char*>(b.host_pointer(src));
  char* hd = static_cast<char*>(b.host_pointer(dst));
  if (hs && hd) {
    std::memset(hs, 1, bytes);
    std::memset(hd, 2, bytes);
    unsigned n = std::max(1u, std::thread::hardware_concurrency());
    copy = [=] {
      std::vector<std::thread> threads;
      size_t chunk = bytes / n;
      for (unsigned i = 0; i < n; ++i) {
        size_t off = i * chunk, len = i + 1 == n ? bytes - off : chunk;
        threads.emplace_back([=] { std::memcpy(hd + off, hs + off, len); });
      }
      for (auto& t : threads) t.join();
    };
  } else {
    copy = [&b, d, src, dst, bytes] { b.copy_on_device(d.index, dst, 0, src, 0, bytes); };
  }
  Measurement m;
  try {
    m = measure(d, copy, calibration_settings());
  } catch (...) {
    b.deallocate(d.index, src, bytes);
    b.deallocate(d.index, dst, bytes);
    throw;
  }
  b.deallocate(d.index, src, bytes);
  b.deallocate(d.index, dst, bytes);
  double us = m.device_timer ? m.device_us.min : m.host_us.min;
  return us > 0 ? 2.0 * static_cast<double>(bytes) / (us * 1e3) : 0.0;
}

Json read_cache() {
  std::ifstream f(ceilings_path());
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    Json j = Json::parse(ss.str());
    if (j.is(Json::Kind::object)) return j;
  } catch (const Error&) {
    // A damaged cache is recalibrated, not fatal.
  }
  return {};
}

std::string entry_json(const Ceilings& c) {
  std::string s = str("{\"device\": ", json_quote(c.device), ", \"copy_gbps\": ", json_number(c.copy_gbps),
                      ", \"fma_gflops\": {");
  bool first = true;
  for (auto& [dt, v] : c.fma_gflops) {
    s += str(first ? "" : ", ", json_quote(dt), ": ", json_number(v));
    first = false;
  }
  return s + str("}, \"measured_at\": ", json_quote(c.measured_at), "}");
}

void store(const Ceilings& c) {
  Json cache = read_cache();
  std::string out = "{\n  \"schema_version\": 2,\n  \"devices\": {\n";
  bool first = true;
  if (const Json* devs = cache.find("devices"); devs && devs->is(Json::Kind::object)) {
    for (auto& [name, entry] : devs->fields) {
      if (name == c.name || !entry.find("fma_gflops")) continue;  // schema 1 entries are dropped
      Ceilings old;
      old.device = entry.find("device") ? entry.at("device").text : "";
      old.copy_gbps = entry.find("copy_gbps") ? entry.at("copy_gbps").number : 0;
      if (const Json* mm = entry.find("fma_gflops"))
        for (auto& [dt, v] : mm->fields) old.fma_gflops[dt] = v.number;
      old.measured_at = entry.find("measured_at") ? entry.at("measured_at").text : "";
      out += str(first ? "" : ",\n", "    ", json_quote(name), ": ", entry_json(old));
      first = false;
    }
  }
  out += str(first ? "" : ",\n", "    ", json_quote(c.name), ": ", entry_json(c), "\n  }\n}\n");
  fs::path path = ceilings_path();
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path.string() + str(".tmp", getpid());
  {
    std::ofstream f(tmp);
    f << out;
    if (!f) throw InvalidArgument(str("[bench] cannot write the ceilings cache '", tmp.string(), "'"));
  }
  fs::rename(tmp, path, ec);
  if (ec) throw InvalidArgument(str("[bench] cannot write the ceilings cache '", path.string(), "': ", ec.message()));
}

}  // namespace

double Ceilings::peak_gflops(const std::string& dtype) const {
  auto it = fma_gflops.find(dtype);
  if (it != fma_gflops.end() && it->second > 0) return it->second;
  it = fma_gflops.find("f32");
  return it == fma_gflops.end() ? 0.0 : it->second;
}

std::string ceilings_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return (fs::path(xdg) / "porta" / "ceilings.json").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : ".") / ".cache" / "porta" / "ceilings.json").string();
}

Ceilings ceilings_for(Device device, bool force, std::ostream& log) {
  Ceilings c;
  c.device = device.str();
  c.name = device_name(device);
  if (!force) {
    Json cache = read_cache();
    const Json* devs = cache.find("devices");
    const Json* entry = devs ? devs->find(c.name) : nullptr;
    if (entry && entry->find("copy_gbps") && entry->find("fma_gflops")) {
      c.copy_gbps = entry->at("copy_gbps").number;
      for (auto& [dt, v] : entry->at("fma_gflops").fields) c.fma_gflops[dt] = v.number;
      c.measured_at = entry->find("measured_at") ? entry->at("measured_at").text : "";
      c.source = "cache";
      log << "ceilings for " << c.device << " (" << c.name << ") from " << ceilings_path() << ", measured "
          << c.measured_at << "\n";
      return c;
    }
    log << "no ceilings stored for " << c.device << " (" << c.name << "): calibrating now\n";
  } else {
    log << "calibrating " << c.device << " (" << c.name << ")\n";
  }
  c.copy_gbps = measure_copy_gbps(device);
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    double g = backend_for(device).measure_fma_gflops(device.index, dt);
    if (g > 0) c.fma_gflops[std::string(dtype_name(dt))] = g;
  }
  c.measured_at = now_utc();
  c.source = "calibrated now";
  store(c);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", c.copy_gbps);
  log << "  copy " << buf << " GB/s";
  for (auto& [dt, g] : c.fma_gflops) {
    std::snprintf(buf, sizeof buf, "%.1f", g);
    log << ", fma " << dt << " " << buf << " GFLOP/s";
  }
  log << "; stored in " << ceilings_path() << "\n";
  return c;
}

}  // namespace porta::cli::bench
