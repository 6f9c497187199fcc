// porta cpu backend — oneDNN engine, per-thread streams and the primitive cache.
#include "backends/cpu/dnnl_context.hpp"

#include <omp.h>

#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::cpu {

dnnl::engine& engine() {
  static dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

dnnl::memory::data_type dnnl_type(DType t) {
  using dt = dnnl::memory::data_type;
  switch (t) {
    case DType::f32: return dt::f32;
    case DType::f16: return dt::f16;
    case DType::bf16: return dt::bf16;
    case DType::i32: return dt::s32;
    case DType::i8: return dt::s8;
    case DType::u8: return dt::u8;
    default: break;
  }
  throw DTypeError(str("[cpu] oneDNN has no ", dtype_name(t), " type"));
}

dnnl::memory::desc plain_desc(const Shape& shape, DType t) {
  Shape s = shape.empty() ? Shape{1} : shape;
  return dnnl::memory::desc(dnnl::memory::dims(s.begin(), s.end()), dnnl_type(t),
                            dnnl::memory::dims(contiguous_strides(s)));
}

dnnl::memory::desc strided_desc(const Shape& shape, const std::vector<int64_t>& strides, DType t) {
  dnnl::memory::dims dims(shape.begin(), shape.end());
  dnnl::memory::dims st(strides.begin(), strides.end());
  if (dims.empty()) {
    dims = {1};
    st = {1};
  }
  return dnnl::memory::desc(dims, dnnl_type(t), st);
}

dnnl::memory host_memory(const dnnl::memory::desc& desc, void* ptr) {
  struct Entry {
    void* ptr = nullptr;
    dnnl::memory memory;
  };
  constexpr size_t kEntries = 64;
  thread_local Entry entries[kEntries];
  thread_local size_t next = 0;
  if (ptr) {
    for (Entry& e : entries)
      if (e.ptr == ptr && e.memory.get_desc() == desc) return e.memory;
  }
  dnnl::memory made(desc, engine(), ptr);
  if (ptr) {
    Entry& e = entries[next++ % kEntries];
    e.ptr = ptr;
    e.memory = made;
  }
  return made;
}

dnnl::memory wrap(const Tensor& t, const dnnl::memory::desc& desc) {
  return dnnl::memory(desc, engine(), t.numel() ? t.raw_data() : nullptr);
}

namespace {
struct Cache {
  std::mutex mutex;
  std::list<std::pair<std::string, std::shared_ptr<void>>> order;  // most recent first
  std::unordered_map<std::string, decltype(order)::iterator> map;
  static constexpr size_t kCapacity = 4096;
};
Cache& cache() {
  static Cache* c = new Cache();
  return *c;
}
}  // namespace

std::shared_ptr<void> cached_primitive(const std::string& key0,
                                       const std::function<std::shared_ptr<void>()>& make) {
  // oneDNN sizes some primitives for the thread count current at creation, and porta runs
  // small calls on one thread (kernels/cpu/thread_policy.hpp): keep one entry per count.
  // oneDNN as Debian builds it (DNNL_ENABLE_CONCURRENT_EXEC=OFF) shares one scratchpad per
  // thread among primitives, so a primitive must run on the thread that created it: entries
  // are per thread too (concurrent sessions otherwise corrupted each other's convolutions,
  // tests/concurrency_test.cpp).
  std::string key = key0;
  key += "|threads=";
  key += std::to_string(omp_get_max_threads());
  key += "|creator=";
  key += std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    auto it = c.map.find(key);
    if (it != c.map.end()) {
      c.order.splice(c.order.begin(), c.order, it->second);
      return it->second->second;
    }
  }
  std::shared_ptr<void> made = make();
  std::lock_guard lock(c.mutex);
  auto it = c.map.find(key);
  if (it != c.map.end()) return it->second->second;
  c.order.emplace_front(key, made);
  c.map[key] = c.order.begin();
  if (c.order.size() > Cache::kCapacity) {
    c.map.erase(c.order.back().first);
    c.order.pop_back();
  }
  return made;
}

}  // namespace porta::cpu
