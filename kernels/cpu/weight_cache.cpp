// porta cpu kernels — data derived once from session-constant tensors: weights reordered into
// a primitive's layout (weights_for, dnn_layout.hpp) and any other repacked form (the
// recurrent weights of LSTM and GRU; cached_derived, cpu_common.hpp).
#include <mutex>
#include <unordered_map>

#include "kernels/cpu/dnn_layout.hpp"

namespace porta::cpu {
namespace {

// key = what + storage address + view; the weak pointer proves the storage is still the one
// the entry was made from (a freed and reallocated block at the same address does not match).
// Entries live as long as their storage: a session's constants are read on every run, so a
// size limit would only make a model with more weights than the limit repack them every call.
// Entries of freed storages are swept out as new ones come in.
struct DerivedCache {
  struct Entry {
    std::weak_ptr<Storage> storage;
    std::shared_ptr<const void> value;
  };
  std::mutex mutex;
  std::unordered_map<std::string, Entry> entries;
  size_t sweep_at = 64;  // sweep freed storages' entries when the map reaches this size
};

DerivedCache& derived_cache() {
  static DerivedCache* c = new DerivedCache();
  return *c;
}

std::string derived_key(const Tensor& w, const std::string& what) {
  std::string key = what;
  key += '|';
  key += std::to_string(reinterpret_cast<uintptr_t>(w.storage().get()));
  key += '+';
  key += std::to_string(w.offset());
  for (int64_t d : w.shape()) {
    key += ',';
    key += std::to_string(d);
  }
  return key;
}

}  // namespace

std::shared_ptr<const void> cached_derived(const Tensor& w, const std::string& what,
                                           const std::function<std::shared_ptr<const void>()>& make) {
  const std::string key = derived_key(w, what);
  DerivedCache& c = derived_cache();
  auto find = [&]() -> std::shared_ptr<const void> {
    auto it = c.entries.find(key);
    if (it == c.entries.end()) return nullptr;
    if (it->second.storage.lock() == w.storage()) return it->second.value;
    c.entries.erase(it);  // the address was reused by another storage
    return nullptr;
  };
  {
    std::lock_guard lock(c.mutex);
    if (auto v = find()) return v;
  }
  std::shared_ptr<const void> made = make();
  std::lock_guard lock(c.mutex);
  if (auto v = find()) return v;  // another thread made it meanwhile
  if (c.entries.size() >= c.sweep_at) {
    for (auto it = c.entries.begin(); it != c.entries.end();)
      it = it->second.storage.expired() ? c.entries.erase(it) : std::next(it);
    c.sweep_at = std::max<size_t>(64, 2 * c.entries.size());
  }
  c.entries.emplace(key, DerivedCache::Entry{w.storage(), made});
  return made;
}

// Weights in the primitive's layout: from the cache when they are a session constant.
dnnl::memory weights_for(const Tensor& w, const dnnl::memory& plain, const dnnl::memory::desc& want, bool constant) {
  if (!constant || plain.get_desc() == want) return reordered(plain, want);
  std::string what = "weights|";
  what.append(reinterpret_cast<const char*>(&want.data), sizeof(dnnl_memory_desc_t));
  auto made = cached_derived(w, what, [&] {
    dnnl::memory m = reordered(plain, want);
    return std::static_pointer_cast<const void>(std::make_shared<dnnl::memory>(m));
  });
  return *std::static_pointer_cast<const dnnl::memory>(made);
}

void hold_packed(KernelContext& ctx, size_t input, const dnnl::memory& packed, const dnnl::memory::desc& stored) {
  if (packed.get_desc() == stored || packed.get_desc().data_type() != stored.data_type()) return;
  if (packed.get_data_handle() == nullptr) return;
  // Only a layout oneDNN can reorder back (Winograd's transformed weights cannot be).
  try {
    dnnl::memory to(stored, engine(), nullptr);
    dnnl::reorder::primitive_desc(packed, to);
  } catch (const dnnl::error&) {
    return;
  }
  ctx.held.push_back({input, [packed, stored](void* dst) { reorder_into(packed, dnnl::memory(stored, engine(), dst)); }});
}

}  // namespace porta::cpu
