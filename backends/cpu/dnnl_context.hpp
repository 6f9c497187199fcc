// porta cpu backend — the oneDNN engine and stream shared by cpu kernels, and a primitive
// cache keyed on a string built from shapes, dtypes and attributes.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "porta/dtype.hpp"
#include "porta/tensor.hpp"

namespace porta::cpu {

dnnl::engine& engine();
/// Stream of the calling thread (oneDNN streams are not shared between threads).
dnnl::stream& stream();

/// oneDNN data type of a porta dtype; throws DTypeError for dtypes oneDNN lacks.
dnnl::memory::data_type dnnl_type(DType t);
/// Plain (row-major) memory descriptor for a shape; scalar shapes become {1}.
dnnl::memory::desc plain_desc(const Shape& shape, DType t);
/// Memory descriptor with explicit strides (in elements).
dnnl::memory::desc strided_desc(const Shape& shape, const std::vector<int64_t>& strides, DType t);
/// oneDNN memory over host memory at `ptr` (not owned, no copy) described by `desc`. The
/// calling thread keeps its last 64 such objects and returns the same one for the same
/// descriptor and pointer, so per-call wrapping allocates nothing once warm.
dnnl::memory host_memory(const dnnl::memory::desc& desc, void* ptr);
/// Wraps a cpu tensor's data as oneDNN memory (no copy).
dnnl::memory wrap(const Tensor& t, const dnnl::memory::desc& desc);

/// Returns the cached primitive for `key`, creating it with `make` on first use. Thread-safe.
/// Entries are kept per OpenMP thread count of the caller. The cache holds at most a few thousand entries (least recently used evicted).
std::shared_ptr<void> cached_primitive(const std::string& key,
                                       const std::function<std::shared_ptr<void>()>& make);

template <typename P>
std::shared_ptr<P> cached(const std::string& key, const std::function<std::shared_ptr<P>()>& make) {
  return std::static_pointer_cast<P>(cached_primitive(key, [&] { return std::shared_ptr<void>(make()); }));
}

}  // namespace porta::cpu
