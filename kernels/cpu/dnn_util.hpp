// porta cpu kernels — helpers shared by the oneDNN-backed kernels (MatMul, Gemm, Conv, pools,
// norms, softmax): cache keys, running a primitive on the calling thread's stream, and
// logical-dims memory descriptors over porta's row-major tensors.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/dnnl_context.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "porta/util.hpp"

namespace porta::cpu {

inline std::string key_part(const std::vector<int64_t>& v) { return shape_str(v); }
inline std::string key_part(DType t) { return std::string(dtype_name(t)); }
inline std::string key_part(const std::string& s) { return s; }
inline std::string key_part(const char* s) { return s; }
inline std::string key_part(int64_t v) { return std::to_string(v); }
inline std::string key_part(int v) { return std::to_string(v); }
inline std::string key_part(bool v) { return v ? "1" : "0"; }
// Exact (hexadecimal) so attributes differing in the last bit never share a primitive.
inline std::string key_part(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}


/// "name|f32|2x3|4x5|..." — the primitive cache key for a call. Every value that changes the
/// primitive (dtypes, shapes, attributes) must be part of it.
template <typename... Parts>
std::string dnn_key(std::string_view name, const Parts&... parts) {
  std::string k(name);
  ((k += '|', k += key_part(parts)), ...);
  return k;
}
/// oneDNN dims from a porta shape.
inline dnnl::memory::dims dims_of(const Shape& s) { return dnnl::memory::dims(s.begin(), s.end()); }

/// Executes `prim` with `args` on the calling thread's stream and waits for it.
inline void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args) {
  prim.execute(stream(), args);
  stream().wait();
}

/// Memory over a raw host pointer (which oneDNN never frees).
inline dnnl::memory wrap_ptr(const dnnl::memory::desc& desc, const void* p) {
  return dnnl::memory(desc, engine(), const_cast<void*>(p));
}

/// A primitive, or the reason oneDNN refused to build it (so refusals are cached too and a
/// kernel can switch to its own loop without retrying every call).
template <typename P>
struct MaybePrimitive {
  P prim;
  typename P::primitive_desc pd;
  bool ok = false;
  std::string why;
};

}  // namespace porta::cpu
