// porta cpu kernels — helpers shared by the oneDNN-backed kernels (MatMul, Gemm, Conv, pools,
// norms, softmax): cache keys, running a primitive on the calling thread's stream, and
// logical-dims memory descriptors over porta's row-major tensors.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/dnnl_context.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "porta/util.hpp"

namespace porta::cpu {

// Key parts are appended without streams or printf: keys are built on every call of a
// oneDNN-backed kernel, so their cost is part of each small op's overhead.
inline void append_int(std::string& k, int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  k.append(buf, res.ptr);
}
inline void key_append(std::string& k, const std::vector<int64_t>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) k += 'x';
    append_int(k, v[i]);
  }
  if (v.empty()) k += "scalar";
}
inline void key_append(std::string& k, DType t) { k += dtype_name(t); }
inline void key_append(std::string& k, const std::string& s) { k += s; }
inline void key_append(std::string& k, const char* s) { k += s; }
inline void key_append(std::string& k, int64_t v) { append_int(k, v); }
inline void key_append(std::string& k, int v) { append_int(k, v); }
inline void key_append(std::string& k, bool v) { k += v ? '1' : '0'; }
// Exact: the double's bits in hex, so attributes differing in the last bit never share a
// primitive.
inline void key_append(std::string& k, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  static constexpr char kHex[] = "0123456789abcdef";
  char buf[16];
  for (int i = 15; i >= 0; --i, bits >>= 4) buf[i] = kHex[bits & 15];
  k.append(buf, 16);
}

/// "name|f32|2x3|4x5|..." — the primitive cache key for a call. Every value that changes the
/// primitive (dtypes, shapes, attributes) must be part of it.
template <typename... Parts>
std::string dnn_key(std::string_view name, const Parts&... parts) {
  std::string k;
  k.reserve(96);
  k += name;
  ((k += '|', key_append(k, parts)), ...);
  return k;
}
/// oneDNN dims from a porta shape.
inline dnnl::memory::dims dims_of(const Shape& s) { return dnnl::memory::dims(s.begin(), s.end()); }

/// Executes `prim` with `args` on the calling thread's stream and waits for it.
inline void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args) {
  prim.execute(stream(), args);
  stream().wait();
}

/// Memory over a raw host pointer (which oneDNN never frees). Reuses the calling thread's
/// recent memory objects for the same (descriptor, pointer): creating one allocates inside
/// oneDNN, which was about a fifth of a small Gemm/LayerNorm call.
inline dnnl::memory wrap_ptr(const dnnl::memory::desc& desc, const void* p) {
  return host_memory(desc, const_cast<void*>(p));
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
