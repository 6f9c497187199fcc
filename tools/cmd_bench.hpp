// porta bench — shared types of the benchmark subcommand, split by job:
//   cmd_bench.cpp           argument handling, modes, the report
//   cmd_bench_timing.cpp    warm-up + repeat-until (N runs, T seconds), device and host time
//   cmd_bench_suite.cpp     which (op, case, dtype, device) to run, running them, --compare
//   cmd_bench_ceilings.cpp  per-device ceilings: calibration, the cache file
//   cmd_bench_output.cpp    table, JSON, CSV;   cmd_bench_svg.cpp  the chart
//   cmd_bench_model.cpp     whole models at several batch sizes
//   cmd_bench_support.cpp   ops x backends support matrix
#pragma once
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "tools/cli.hpp"

namespace porta::cli {
/// `porta bench`: see docs/BENCH.md.
int cmd_bench(const Args& args);
}  // namespace porta::cli

namespace porta::cli::bench {

inline const std::vector<std::string> kValuedFlags = {
    "--op", "--device", "--dtype", "--case", "--json", "--csv", "--svg", "--min-runs", "--min-time",
    "--warmup", "--max-case-time", "--compare", "--batch"};
inline const std::vector<std::string> kSwitches = {"--calibrate", "--support", "--markdown", "--list",
                                                   "--no-progress"};

/// How long to measure each case.
struct Settings {
  int warmup_runs = 1;
  int min_runs = 5;            ///< at least this many timed runs ...
  double min_time_s = 0.2;     ///< ... and at least this much time in timed runs
  /// Time budget of one case: a case estimated (or seen in its warm-up) to need more per run is
  /// skipped; timed runs stop here once there are 3 of them, even below min_runs.
  double max_case_s = 2.0;
  bool progress = false;       ///< progress line on stderr (stderr is a terminal)
};

struct Stats {
  double median = 0, min = 0, max = 0;
};

/// Timings of one measured call.
struct Measurement {
  int runs = 0;
  Stats device_us;            ///< device timer (CUDA events, Vulkan timestamps; host clock on cpu)
  Stats host_us;              ///< host wall time from issue to completion
  bool device_timer = false;  ///< device_us comes from a device timer
  double warmup_us = 0;       ///< host time of all warm-up runs
  /// runs == 0: not timed, because one warm-up run took longer than max_case_s.
  /// (max - min) / median of the time reported (device time when available).
  double spread() const;
};

/// Runs `call` (which queues work on `device`) warm-up times, then until both min_runs and
/// min_time_s are reached (a slow call stops at max_case_s once it has 3 runs). Synchronizes
/// the device after every run. `device_timer` false: host time only (calls that copy to the
/// host in the middle, such as whole-model runs, are not one span of device work).
Measurement measure(Device device, const std::function<void()>& call, const Settings& settings,
                    bool device_timer = true);

/// A device's measured limits.
struct Ceilings {
  std::string device;   ///< "cpu", "vulkan:0"
  std::string name;     ///< the device's own name (the cache key)
  double copy_gbps = 0; ///< device memory copy: (read + write bytes) / time
  /// Arithmetic peak by dtype ("f32", "f16", "bf16"): the backend's fma-chain probe
  /// (Backend::measure_fma_gflops), not a porta kernel.
  std::map<std::string, double> fma_gflops;
  std::string measured_at;  ///< UTC date and time of calibration
  std::string source;       ///< "cache" or "calibrated now"
  double peak_gflops(const std::string& dtype) const;  ///< the dtype's, else f32's
  /// FLOP per byte above which a call is compute-bound.
  double ridge(const std::string& dtype) const { return copy_gbps > 0 ? peak_gflops(dtype) / copy_gbps : 0; }
};

/// $XDG_CACHE_HOME/porta/ceilings.json, else ~/.cache/porta/ceilings.json.
std::string ceilings_path();
/// The device's ceilings from the cache, or calibrated now (and stored) when missing or
/// when `force`. Says on `log` which happened.
Ceilings ceilings_for(Device device, bool force, std::ostream& log);

/// One (op, case, dtype, device) row of the suite.
struct Result {
  std::string op, case_name, dtype, device, variant;  ///< variant: "" or "no-kernel"
  std::string status = "ok";  ///< ok | skipped | error
  std::string note;           ///< why skipped / the error / the path's reason
  std::string path;           ///< native | composite | fallback:cpu
  std::string shapes;         ///< input shapes, "1024x1024, 1024x1024"
  Measurement m;
  double flops = 0, bytes = 0, gflops = 0, gbps = 0;
  std::string bound;          ///< "compute" or "memory": the ceiling used
  double ceiling = 0;         ///< GFLOP/s or GB/s of that ceiling
  double fraction = 0;        ///< of that ceiling
  bool unstable = false;      ///< spread > 10%
  double time_us() const { return m.device_timer ? m.device_us.median : m.host_us.median; }
};

/// One side of --compare: a device, optionally with the op's own kernel there disabled.
struct Side {
  Device device;
  bool no_kernel = false;
  std::string label() const { return device.str() + (no_kernel ? "/no-kernel" : ""); }
};

/// Which cases to run.
struct Selection {
  std::vector<std::string> ops, dtypes, cases;
  std::vector<Side> sides;
};

/// Runs the selected cases on every side; ceilings are keyed by device string.
std::vector<Result> run_suite(const Selection& selection, const std::map<std::string, Ceilings>& ceilings,
                              const Settings& settings);
/// Fills gflops/gbps/bound/ceiling/fraction of a measured result.
void rate(Result& r, const Ceilings* ceilings);

/// Everything one `porta bench` run reports.
struct ModelResult {
  std::string model, device;
  int64_t batch = 1;
  std::string status = "ok", note;
  Measurement m;
  double throughput = 0;  ///< samples per second
  std::map<std::string, size_t> peak_memory;  ///< bytes per device
};
struct Report {
  Settings settings;
  std::vector<Ceilings> ceilings;
  std::vector<Result> results;
  std::vector<ModelResult> models;
  std::vector<std::pair<Side, Side>> compare;  ///< when --compare was given
};

void print_table(std::ostream& os, const Report& report);
void print_compare(std::ostream& os, const Report& report);
void print_models(std::ostream& os, const Report& report);
void write_json(const std::string& path, const Report& report);
void write_csv(const std::string& path, const Report& report);
void write_svg(const std::string& path, const Report& report);

/// `porta bench MODEL.onnx ...`: latency per device and batch size (empty: the inputs as they are).
std::vector<ModelResult> run_models(const std::string& path, const std::vector<Device>& devices,
                                    const std::vector<int64_t>& batches, const Settings& settings);
/// `porta bench --support`: ops x built backends (markdown with `markdown`).
void print_support(std::ostream& os, bool markdown);

}  // namespace porta::cli::bench
