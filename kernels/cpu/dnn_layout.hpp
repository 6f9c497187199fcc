// porta cpu kernels — moving tensors between porta's plain layouts and the blocked layouts
// oneDNN picks for a primitive (format_tag::any), with cached reorder primitives.
#pragma once
#include "kernels/cpu/dnn_util.hpp"

namespace porta::cpu {

/// Cache key of a reorder between two descriptors: their raw bytes (exact, no hashing).
inline std::string reorder_key(const dnnl::memory::desc& a, const dnnl::memory::desc& b) {
  std::string k = "reorder|";
  k.append(reinterpret_cast<const char*>(&a.data), sizeof(dnnl_memory_desc_t));
  k.append(reinterpret_cast<const char*>(&b.data), sizeof(dnnl_memory_desc_t));
  return k;
}

/// Memory in `want` holding the contents of `have` (the same memory when the descriptors
/// agree; else a scratch buffer filled by a cached reorder).
inline dnnl::memory reordered(const dnnl::memory& have, const dnnl::memory::desc& want) {
  if (have.get_desc() == want) return have;
  dnnl::memory out(want, engine());
  auto r = cached<dnnl::reorder>(reorder_key(have.get_desc(), want),
                                 [&] { return std::make_shared<dnnl::reorder>(dnnl::reorder::primitive_desc(have, out)); });
  execute(*r, {{DNNL_ARG_FROM, have}, {DNNL_ARG_TO, out}});
  return out;
}

/// Copies `from` (any layout) into `to` (e.g. a plain output) with a cached reorder.
inline void reorder_into(const dnnl::memory& from, const dnnl::memory& to) {
  if (from.get_desc() == to.get_desc() && from.get_data_handle() == to.get_data_handle()) return;
  auto r = cached<dnnl::reorder>(reorder_key(from.get_desc(), to.get_desc()),
                                 [&] { return std::make_shared<dnnl::reorder>(dnnl::reorder::primitive_desc(from, to)); });
  execute(*r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

}  // namespace porta::cpu
