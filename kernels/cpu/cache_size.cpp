// porta cpu kernels — cache sizes (cache_size.hpp).
#include "kernels/cpu/cache_size.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>

namespace porta::cpu {
namespace {

// One line of a sysfs file, "" when it cannot be read.
std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (f) std::getline(f, line);
  return line;
}

// "32768K", "1M", "512" as bytes; 0 when it is none of those.
int64_t parse_size(const std::string& text) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (...) {
    return 0;
  }
  if (v <= 0) return 0;
  const std::string unit = text.substr(used);
  if (unit.empty()) return v;
  if (unit == "K") return v << 10;
  if (unit == "M") return v << 20;
  if (unit == "G") return v << 30;
  return 0;
}

int64_t sysfs_cache_bytes(int level) {
  int64_t best = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    const std::string lv = read_line(dir + "level");
    if (lv.empty()) break;
    if (lv != std::to_string(level)) continue;
    const std::string type = read_line(dir + "type");
    if (type != "Data" && type != "Unified") continue;
    best = std::max(best, parse_size(read_line(dir + "size")));
  }
  return best;
}

int64_t sysconf_cache_bytes(int level) {
  long v = -1;
  switch (level) {
#ifdef _SC_LEVEL1_DCACHE_SIZE
    case 1: v = sysconf(_SC_LEVEL1_DCACHE_SIZE); break;
    case 2: v = sysconf(_SC_LEVEL2_CACHE_SIZE); break;
    case 3: v = sysconf(_SC_LEVEL3_CACHE_SIZE); break;
    case 4: v = sysconf(_SC_LEVEL4_CACHE_SIZE); break;
#endif
    default: break;
  }
  return v > 0 ? static_cast<int64_t>(v) : 0;
}

}  // namespace

int64_t cache_bytes(int level) {
  if (level < 1) return 0;
  const int64_t from_sysfs = sysfs_cache_bytes(level);
  return from_sysfs > 0 ? from_sysfs : sysconf_cache_bytes(level);
}

int64_t last_level_cache_bytes() {
  static const int64_t bytes = [] {
    for (int level = 4; level >= 1; --level)
      if (const int64_t b = cache_bytes(level); b > 0) return b;
    return int64_t{0};
  }();
  return bytes;
}

namespace {
// constants_stay_cached's forced answer: -1 none, 0 never, 1 always.
std::atomic<int> forced{[] {
  const char* e = std::getenv("PORTA_CPU_CACHED_CONSTANTS");
  if (!e) return -1;
  return std::string(e) == "1" ? 1 : std::string(e) == "0" ? 0 : -1;
}()};
}  // namespace

bool constants_stay_cached(int64_t bytes) {
  if (const int f = forced.load(std::memory_order_relaxed); f >= 0) return f == 1;
  const int64_t llc = last_level_cache_bytes();
  return bytes > 0 && llc > 0 && bytes <= llc / 2;
}

void force_constants_cached(int mode) { forced.store(mode < 0 ? -1 : mode > 0 ? 1 : 0, std::memory_order_relaxed); }

}  // namespace porta::cpu
