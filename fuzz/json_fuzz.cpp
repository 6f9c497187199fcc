// porta fuzz — JSON as `porta bench` reads it (the ceilings cache in the user's cache folder,
// --json result files): Json::parse, the lookups the ceilings cache reader makes, and the
// invariant that json_quote round-trips any byte string through the parser.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_setup.hpp"
#include "porta/error.hpp"
#include "runtime/bench_json.hpp"

using porta::bench::Json;

namespace {

// The walk tools/cmd_bench_ceilings.cpp does over a cache file (members that may be absent
// or of another kind than expected).
double walk_ceilings(const Json& cache) {
  double sum = 0;
  const Json* devices = cache.find("devices");
  if (!devices) return sum;
  for (const auto& [name, entry] : devices->fields) {
    if (const Json* copy = entry.find("copy_gbps")) sum += copy->number;
    if (const Json* mm = entry.find("fma_gflops"))
      for (const auto& [dtype, v] : mm->fields) sum += v.number + static_cast<double>(dtype.size());
    if (const Json* at = entry.find("measured_at")) sum += static_cast<double>(at->text.size());
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    Json j = Json::parse(text);
    volatile double sink = walk_ceilings(j);
    (void)sink;
  } catch (const porta::Error& e) {
    porta::fuzz::note_refusal(e);
  }
  // Any bytes quoted by json_quote parse back to themselves.
  Json back = Json::parse(porta::bench::json_quote(text));
  if (!back.is(Json::Kind::string) || back.text != text) __builtin_trap();
  return 0;
}
