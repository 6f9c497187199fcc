// porta bench — the report as an aligned table (stdout), JSON (schema in docs/BENCH.md) and CSV.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "runtime/bench_json.hpp"
#include "tools/cmd_bench.hpp"

namespace porta::cli::bench {
namespace {

using porta::bench::json_number;
using porta::bench::json_quote;

/// Bumped whenever a field changes meaning or disappears (adding fields keeps it).
constexpr int kSchemaVersion = 1;

std::string fmt(double v, int precision = 1) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string time_str(double us) {
  if (us >= 1e6) return fmt(us / 1e6, 2) + " s";
  if (us >= 1e3) return fmt(us / 1e3, 2) + " ms";
  return fmt(us, 1) + " us";
}

std::string label(const Result& r) { return r.device + (r.variant.empty() ? "" : "/" + r.variant); }

std::ofstream open_out(const std::string& path) {
  std::ofstream f(path);
  if (!f) throw InvalidArgument(str("[bench] cannot write '", path, "'"));
  return f;
}

std::string stats_json(const Stats& s) {
  return str("{\"median\": ", json_number(s.median), ", \"min\": ", json_number(s.min), ", \"max\": ",
             json_number(s.max), "}");
}

std::string device_key(const Result& r) { return r.device; }

// Widths of the op and case columns: wide enough for the longest name (custom ops have long
// ones) so the columns stay aligned, at least the classic 22 and 20.
struct NameWidths {
  int op = 22, case_name = 20;
};
NameWidths name_widths(const std::vector<Result>& results) {
  NameWidths w;
  for (const Result& r : results) {
    w.op = std::max(w.op, static_cast<int>(r.op.size()) + 2);
    w.case_name = std::max(w.case_name, static_cast<int>(r.case_name.size()) + 2);
  }
  return w;
}

}  // namespace

void print_table(std::ostream& os, const Report& rep) {
  for (auto& c : rep.ceilings) {
    os << "ceilings " << c.device << " (" << c.name << "): copy " << fmt(c.copy_gbps) << " GB/s";
    for (auto& [dt, g] : c.fma_gflops) os << ", fma " << dt << " " << fmt(g) << " GFLOP/s";
    os << " [" << c.source << (c.measured_at.empty() ? "" : ", " + c.measured_at) << "]\n";
  }
  if (rep.results.empty()) return;
  const NameWidths w = name_widths(rep.results);
  os << std::left << std::setw(w.op) << "op" << std::setw(w.case_name) << "case" << std::setw(6) << "dtype" << std::setw(20)
     << "device" << std::setw(13) << "path" << std::right << std::setw(11) << "median" << std::setw(11) << "min"
     << std::setw(11) << "max" << std::setw(6) << "runs" << std::setw(10) << "GFLOP/s" << std::setw(9) << "GB/s"
     << std::setw(8) << "%ceil" << "  bound\n";
  int unstable = 0;
  for (const Result& r : rep.results) {
    os << std::left << std::setw(w.op) << r.op << std::setw(w.case_name) << r.case_name << std::setw(6) << r.dtype
       << std::setw(20) << label(r);
    if (r.status != "ok") {
      os << std::setw(13) << (r.path.empty() ? "-" : r.path) << r.status << ": " << r.note << "\n";
      continue;
    }
    const Stats& s = r.m.device_timer ? r.m.device_us : r.m.host_us;
    os << std::setw(13) << r.path << std::right << std::setw(11) << time_str(s.median) << std::setw(11)
       << time_str(s.min) << std::setw(11) << time_str(s.max) << std::setw(6) << r.m.runs << std::setw(10)
       << (r.flops > 0 ? fmt(r.gflops) : "-") << std::setw(9) << fmt(r.gbps) << std::setw(8)
       << (r.bound.empty() ? "-" : fmt(100 * r.fraction)) << "  " << (r.bound.empty() ? "-" : r.bound);
    if (r.unstable) {
      os << "  spread " << fmt(100 * r.m.spread(), 0) << "% (>10%)";
      ++unstable;
    }
    os << "\n";
  }
  if (!rep.results.empty())
    os << "times: device timer where the device has one, else host wall time; %ceil: of the copy bandwidth "
          "(memory-bound) or the fma peak (compute-bound), chosen by FLOP/byte against the device's ridge "
          "point\n";
  // Over 100% of a ceiling has honest causes, and the note names them: the kernel does less
  // work than counted from the shapes (Winograd or FFT convolution), its data partly stays in
  // the caches between timed runs (every run re-reads the same inputs), or the ceiling was
  // measured when the machine was slower than now (busy, or a shared memory system in a slow
  // phase).
  std::map<std::string, std::pair<int, double>> over;  // device -> (cases, highest fraction)
  for (const Result& r : rep.results)
    if (r.status == "ok" && r.fraction > 1.05) {
      auto& o = over[r.device];
      ++o.first;
      o.second = std::max(o.second, r.fraction);
    }
  for (auto& [d, o] : over) {
    std::string when;
    for (const Ceilings& c : rep.ceilings)
      if (c.device == d && !c.measured_at.empty()) when = " (measured " + c.measured_at + ")";
    os << "note: " << o.first << " case(s) on " << d << " exceed its ceilings" << when << ", up to "
       << fmt(100 * o.second, 0) << "%: a kernel may do less work than the count from its shapes (e.g. a "
       << "Winograd convolution) or find part of its data still cached from the previous run (a working set "
       << "near the last-level cache's size), or the ceilings were measured while the machine was slower than now (busy, "
       << "or shared memory bandwidth in a slow phase: bench/platform_drift.cpp shows it); recalibrate with "
       << "porta bench --calibrate --device " << d << " when the machine is quiet\n";
  }
  if (unstable) os << unstable << " case(s) spread over 10% between fastest and slowest run (max-min)/median\n";
}

void print_compare(std::ostream& os, const Report& rep) {
  const NameWidths w = name_widths(rep.results);
  for (auto& [a, b] : rep.compare) {
    os << "\ncompare " << a.label() << " vs " << b.label() << " (ratio = " << b.label() << " time / " << a.label()
       << " time; > 1: " << a.label() << " is faster)\n";
    os << std::left << std::setw(w.op) << "op" << std::setw(w.case_name) << "case" << std::setw(6) << "dtype" << std::setw(26)
       << a.label() << std::setw(26) << b.label() << std::right << std::setw(8) << "ratio\n";
    for (size_t i = 0; i < rep.results.size(); ++i) {
      const Result& ra = rep.results[i];
      if (label(ra) != a.label()) continue;
      for (const Result& rb : rep.results) {
        if (label(rb) != b.label() || rb.op != ra.op || rb.case_name != ra.case_name || rb.dtype != ra.dtype) continue;
        auto cell = [](const Result& r) {
          return r.status == "ok" ? time_str(r.time_us()) + " " + r.path : r.status;
        };
        os << std::left << std::setw(w.op) << ra.op << std::setw(w.case_name) << ra.case_name << std::setw(6) << ra.dtype
           << std::setw(26) << cell(ra) << std::setw(26) << cell(rb) << std::right << std::setw(7)
           << (ra.status == "ok" && rb.status == "ok" && ra.time_us() > 0 ? fmt(rb.time_us() / ra.time_us(), 2) : "-")
           << "\n";
        break;
      }
    }
  }
}

void print_models(std::ostream& os, const Report& rep) {
  if (rep.models.empty()) return;
  os << std::left << std::setw(40) << "model" << std::setw(12) << "device" << std::right << std::setw(6) << "batch"
     << std::setw(12) << "median" << std::setw(12) << "min" << std::setw(12) << "max" << std::setw(6) << "runs"
     << std::setw(14) << "samples/s" << "  peak memory\n";
  for (const ModelResult& m : rep.models) {
    os << std::left << std::setw(40) << m.model << std::setw(12) << m.device << std::right << std::setw(6) << m.batch;
    if (m.status != "ok") {
      os << "  " << m.status << ": " << m.note << "\n";
      continue;
    }
    os << std::setw(12) << time_str(m.m.host_us.median) << std::setw(12) << time_str(m.m.host_us.min)
       << std::setw(12) << time_str(m.m.host_us.max) << std::setw(6) << m.m.runs << std::setw(14)
       << fmt(m.throughput) << " ";
    for (auto& [dev, bytes] : m.peak_memory) os << " " << dev << " " << fmt(bytes / 1048576.0, 1) << " MiB";
    if (m.m.spread() > 0.10) os << "  spread " << fmt(100 * m.m.spread(), 0) << "% (>10%)";
    os << "\n";
  }
}

void write_json(const std::string& path, const Report& rep) {
  std::ostringstream o;
  o << "{\n  \"schema_version\": " << kSchemaVersion << ",\n  \"porta_version\": " << json_quote(version())
    << ",\n  \"settings\": {\"warmup_runs\": " << rep.settings.warmup_runs << ", \"min_runs\": "
    << rep.settings.min_runs << ", \"min_time_s\": " << json_number(rep.settings.min_time_s)
    << ", \"max_case_time_s\": " << json_number(rep.settings.max_case_s) << "},\n";
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) < 0) load[0] = load[1] = load[2] = -1;
  o << "  \"host\": {\"load_average_1m\": " << json_number(load[0]) << "},\n  \"devices\": [";
  for (size_t i = 0; i < rep.ceilings.size(); ++i) {
    const Ceilings& c = rep.ceilings[i];
    o << (i ? ",\n" : "\n") << "    {\"device\": " << json_quote(c.device) << ", \"name\": " << json_quote(c.name)
      << ", \"ceilings\": {\"copy_gbps\": " << json_number(c.copy_gbps) << ", \"fma_gflops\": {";
    bool first = true;
    for (auto& [dt, g] : c.fma_gflops) o << (first ? "" : ", ") << json_quote(dt) << ": " << json_number(g), first = false;
    o << "}, \"measured_at\": " << json_quote(c.measured_at) << ", \"source\": " << json_quote(c.source) << "}}";
  }
  o << (rep.ceilings.empty() ? "" : "\n  ") << "],\n  \"results\": [";
  for (size_t i = 0; i < rep.results.size(); ++i) {
    const Result& r = rep.results[i];
    o << (i ? ",\n" : "\n") << "    {\"op\": " << json_quote(r.op) << ", \"case\": " << json_quote(r.case_name)
      << ", \"dtype\": " << json_quote(r.dtype) << ", \"device\": " << json_quote(device_key(r))
      << ", \"variant\": " << json_quote(r.variant) << ", \"shapes\": " << json_quote(r.shapes)
      << ", \"status\": " << json_quote(r.status) << ", \"note\": " << json_quote(r.note)
      << ", \"path\": " << json_quote(r.path) << ", \"runs\": " << r.m.runs
      << ", \"device_timer\": " << (r.m.device_timer ? "true" : "false")
      << ", \"device_time_us\": " << stats_json(r.m.device_us) << ", \"host_time_us\": " << stats_json(r.m.host_us)
      << ", \"flops\": " << json_number(r.flops) << ", \"bytes\": " << json_number(r.bytes)
      << ", \"gflops\": " << json_number(r.gflops) << ", \"gbps\": " << json_number(r.gbps)
      << ", \"bound\": " << json_quote(r.bound) << ", \"ceiling\": " << json_number(r.ceiling)
      << ", \"fraction_of_ceiling\": " << json_number(r.fraction) << ", \"spread\": " << json_number(r.m.spread())
      << ", \"unstable\": " << (r.unstable ? "true" : "false") << "}";
  }
  o << (rep.results.empty() ? "" : "\n  ") << "],\n  \"models\": [";
  for (size_t i = 0; i < rep.models.size(); ++i) {
    const ModelResult& m = rep.models[i];
    o << (i ? ",\n" : "\n") << "    {\"model\": " << json_quote(m.model) << ", \"device\": " << json_quote(m.device)
      << ", \"batch\": " << m.batch << ", \"status\": " << json_quote(m.status) << ", \"note\": " << json_quote(m.note)
      << ", \"runs\": " << m.m.runs << ", \"host_time_us\": " << stats_json(m.m.host_us)
      << ", \"samples_per_s\": " << json_number(m.throughput) << ", \"peak_memory_bytes\": {";
    bool first = true;
    for (auto& [dev, b] : m.peak_memory) o << (first ? "" : ", ") << json_quote(dev) << ": " << b, first = false;
    o << "}}";
  }
  o << (rep.models.empty() ? "" : "\n  ") << "]\n}\n";
  open_out(path) << o.str();
}

void write_csv(const std::string& path, const Report& rep) {
  std::ofstream f = open_out(path);
  // Same names as the JSON fields, flattened; notes are quoted (they may hold commas).
  f << "op,case,dtype,device,variant,status,path,runs,device_timer,median_us,min_us,max_us,host_median_us,"
       "flops,bytes,gflops,gbps,bound,ceiling,fraction_of_ceiling,spread,unstable,note\n";
  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const Result& r : rep.results) {
    const Stats& s = r.m.device_timer ? r.m.device_us : r.m.host_us;
    f << r.op << "," << r.case_name << "," << r.dtype << "," << r.device << "," << r.variant << "," << r.status << ","
      << r.path << "," << r.m.runs << "," << (r.m.device_timer ? 1 : 0) << "," << json_number(s.median) << ","
      << json_number(s.min) << "," << json_number(s.max) << "," << json_number(r.m.host_us.median) << ","
      << json_number(r.flops) << "," << json_number(r.bytes) << "," << json_number(r.gflops) << ","
      << json_number(r.gbps) << "," << r.bound << "," << json_number(r.ceiling) << "," << json_number(r.fraction)
      << "," << json_number(r.m.spread()) << "," << (r.unstable ? 1 : 0) << "," << quoted(r.note) << "\n";
  }
}

}  // namespace porta::cli::bench
