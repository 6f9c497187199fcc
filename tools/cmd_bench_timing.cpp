// porta bench — timing one call: warm-up, then repeat until at least N runs and T seconds.
//
// Each timed run is issue -> device synchronize, so host time includes launch and queueing;
// device time comes from the backend's timer (Vulkan timestamp queries around the call). On
// the cpu the two are the same clock.
#include <algorithm>
#include <chrono>

#include "tools/cmd_bench.hpp"

namespace porta::cli::bench {
namespace {

Stats stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  return s;
}

}  // namespace

double Measurement::spread() const {
  const Stats& s = device_timer ? device_us : host_us;
  return s.median > 0 ? (s.max - s.min) / s.median : 0.0;
}

Measurement measure(Device device, const std::function<void()>& call, const Settings& settings,
                    bool device_timer) {
  using clock = std::chrono::steady_clock;
  Backend& backend = backend_for(device);
  std::unique_ptr<Timer> timer;
  if (device_timer && device.type != DeviceType::cpu) timer = backend.create_timer(device.index);

  Measurement m;
  auto w0 = clock::now();
  for (int i = 0; i < settings.warmup_runs; ++i) {
    call();
    backend.synchronize(device.index);
  }
  m.warmup_us = std::chrono::duration<double, std::micro>(clock::now() - w0).count();
  // One warm-up over the whole budget: three timed runs would take three times that.
  if (settings.warmup_runs > 0 && m.warmup_us * 1e-6 / settings.warmup_runs > settings.max_case_s) return m;
  std::vector<double> host, dev;
  double total_s = 0;
  int min_runs = std::max(1, settings.min_runs);
  while (static_cast<int>(host.size()) < min_runs || total_s < settings.min_time_s) {
    auto t0 = clock::now();
    if (timer) timer->start();
    call();
    if (timer) timer->stop();
    backend.synchronize(device.index);
    double us = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
    host.push_back(us);
    if (timer) dev.push_back(timer->elapsed_us());
    total_s += us * 1e-6;
    // A slow call stops at the case's time budget once it has a median of 3; a pathological
    // min_time with a sub-microsecond call must still end.
    if ((total_s >= settings.max_case_s && host.size() >= 3) || host.size() >= 100000) break;
  }
  m.runs = static_cast<int>(host.size());
  m.host_us = stats(host);
  m.device_timer = timer != nullptr;
  m.device_us = timer ? stats(dev) : m.host_us;
  return m;
}

}  // namespace porta::cli::bench
