// porta runtime — allocation accounting, memory limits and fault injection.
#include "runtime/memory_limits.hpp"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::detail {
namespace {

struct DeviceAccount {
  size_t live = 0;
  size_t peak = 0;
  size_t limit = 0;  // 0 = none
};

struct State {
  std::mutex mutex;
  std::unordered_map<Device, DeviceAccount> accounts;
  long fault_at = 0;   // allocation number that fails; 0 = never
  long counter = 0;
  bool loaded = false;
};

State& state() {
  // Never destroyed: tensors held by other static objects (test parameters, caches) are
  // freed during exit, after a function-local static would already be gone.
  static State* s = new State();
  return *s;
}

size_t parse_size(const std::string& text, const std::string& whole) {
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (...) {
    throw InvalidArgument(str("[memory] PORTA_MEMORY_LIMIT: bad size '", text, "' in '", whole,
                              "', expected e.g. 512MiB, 2GiB, 1000000"));
  }
  std::string unit = text.substr(pos);
  double mult = 1;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "KiB" || unit == "K") mult = 1024.0;
  else if (unit == "MiB" || unit == "M") mult = 1024.0 * 1024;
  else if (unit == "GiB" || unit == "G") mult = 1024.0 * 1024 * 1024;
  else if (unit == "KB") mult = 1e3;
  else if (unit == "MB") mult = 1e6;
  else if (unit == "GB") mult = 1e9;
  else
    throw InvalidArgument(str("[memory] PORTA_MEMORY_LIMIT: unknown unit '", unit, "' in '", whole, "'"));
  double bytes = value * mult;
  if (!std::isfinite(bytes) || bytes < 0 || bytes >= 9.2e18)
    throw InvalidArgument(str("[memory] PORTA_MEMORY_LIMIT: size '", text, "' in '", whole,
                              "' is not a byte count porta can use"));
  if (static_cast<size_t>(bytes) == 0)
    throw InvalidArgument(str("[memory] PORTA_MEMORY_LIMIT: size '", text, "' in '", whole,
                              "' is zero bytes; leave a device out to give it no limit"));
  return static_cast<size_t>(bytes);
}

// Parses both settings before changing anything, so a malformed one leaves `loaded` false and
// every later allocation reports it again instead of running with half a setting.
void load_locked(State& s) {
  s.loaded = false;
  long fault_at = s.fault_at;
  if (const char* f = std::getenv("PORTA_FAULT_ALLOC")) {
    std::string text = f;
    char* end = nullptr;
    long n = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || n < 0)
      throw InvalidArgument(str("[memory] PORTA_FAULT_ALLOC='", text,
                                "' should be a count of allocations (1 = the first fails, 0 = off)"));
    fault_at = n;
  }
  std::unordered_map<Device, size_t> limits;
  if (const char* env = std::getenv("PORTA_MEMORY_LIMIT")) {
    std::string whole = env, item;
    size_t start = 0;
    while (start <= whole.size()) {
      size_t comma = whole.find(',', start);
      item = whole.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? whole.size() + 1 : comma + 1;
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      if (item.empty()) continue;
      size_t last = item.rfind(':');
      if (last == std::string::npos)
        throw InvalidArgument(str("[memory] PORTA_MEMORY_LIMIT entry '", item,
                                  "' should be DEVICE:SIZE, e.g. cpu:2GiB or vulkan:0:512MiB"));
      Device d;
      try {
        d = Device::parse(item.substr(0, last));
      } catch (const Error& e) {
        throw InvalidArgument(str("[memory] PORTA_MEMORY_LIMIT entry '", item, "': ", e.what()));
      }
      if (limits.count(d))
        throw InvalidArgument(str("[memory] PORTA_MEMORY_LIMIT names ", d.str(), " twice in '", whole, "'"));
      limits[d] = parse_size(item.substr(last + 1), whole);
    }
  }
  for (auto& [d, a] : s.accounts) a.limit = 0;
  for (auto& [d, limit] : limits) s.accounts[d].limit = limit;
  if (std::getenv("PORTA_FAULT_ALLOC")) {
    s.fault_at = fault_at;
    s.counter = 0;
  }
  s.loaded = true;
}

}  // namespace

void check_allocation(Device device, size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.loaded) load_locked(s);
  DeviceAccount& a = s.accounts[device];
  if (++s.counter == s.fault_at)
    throw OutOfMemory(str("[memory] injected allocation failure #", s.fault_at, " on ",
                          device.str(), ": requested ", bytes, " bytes (PORTA_FAULT_ALLOC)"));
  if (a.limit && a.live + bytes > a.limit)
    throw OutOfMemory(str("[memory] ", device.str(), ": requested ", bytes, " bytes, ",
                          a.limit > a.live ? a.limit - a.live : 0, " bytes available of the ",
                          a.limit, "-byte limit (PORTA_MEMORY_LIMIT)"));
  a.live += bytes;
  if (a.live > a.peak) a.peak = a.live;
}

void check_fault(Device device, size_t bytes, const char* what) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.loaded) load_locked(s);
  if (++s.counter == s.fault_at)
    throw OutOfMemory(str("[memory] injected allocation failure #", s.fault_at, " on ", device.str(),
                          ": requested ", bytes, " bytes for ", what, " (PORTA_FAULT_ALLOC)"));
}

long allocation_count() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.counter;
}

void note_failed(Device device, size_t bytes) { note_free(device, bytes); }

void note_free(Device device, size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  DeviceAccount& a = s.accounts[device];
  a.live = a.live >= bytes ? a.live - bytes : 0;
}

size_t live_bytes(Device device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.accounts[device].live;
}

size_t peak_bytes(Device device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.accounts[device].peak;
}

void reset_peak(Device device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto& a = s.accounts[device];
  a.peak = a.live;
}

void reload_memory_settings() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  load_locked(s);
}

void set_fault_allocation(long n) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.loaded) load_locked(s);
  s.fault_at = n;
  s.counter = 0;
}

}  // namespace porta::detail
